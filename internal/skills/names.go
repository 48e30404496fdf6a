package skills

import (
	"fmt"
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"path"
	"strings"
)

// DefaultCategory is where skill_manage create puts a skill given no
// category.
const DefaultCategory = "general"

// SupportDirs are the folders of a skill that write_file may write to
// (agentskills.io: references/, scripts/, assets/; Hermes adds templates/
// and examples/).
var SupportDirs = []string{"references", "templates", "scripts", "examples", "assets"}

var namePattern = lazyregexp.New(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidateName checks a skill name as agentskills.io does: 1–64 characters
// of lowercase letters, digits and hyphens, not starting or ending with a
// hyphen and without "--".
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("skill name is empty")
	}
	if len(name) > MaxNameChars {
		return fmt.Errorf("skill name %q is %d chars, over %d", name, len(name), MaxNameChars)
	}
	if !namePattern().MatchString(name) {
		return fmt.Errorf("invalid skill name %q: use lowercase letters, digits and single hyphens (e.g. incident-triage)", name)
	}
	return nil
}

// ValidateCategory checks a category folder name with the rules of
// ValidateName.
func ValidateCategory(category string) error {
	if err := ValidateName(category); err != nil {
		return fmt.Errorf("invalid category %q: use lowercase letters, digits and single hyphens (e.g. devops)", category)
	}
	return nil
}

// CleanFilePath validates the path of a file inside a skill folder and
// returns it cleaned, slash-separated. It refuses empty, absolute and
// backslash paths and any ".." element, so the path cannot leave the
// folder; symbolic links are handled where the file is opened (os.Root).
func CleanFilePath(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", fmt.Errorf("file path is empty")
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("file path %q must be relative to the skill folder (e.g. references/notes.md)", p)
	}
	for el := range strings.SplitSeq(p, "/") {
		if el == ".." {
			return "", fmt.Errorf("file path %q leaves the skill folder (\"..\")", p)
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return "", fmt.Errorf("file path %q names the skill folder itself", p)
	}
	return clean, nil
}

// supportFilePath validates a path for write_file/remove_file: it must be
// under one of SupportDirs and not be SKILL.md.
func supportFilePath(p string) (string, error) {
	clean, err := CleanFilePath(p)
	if err != nil {
		return "", err
	}
	top, _, nested := strings.Cut(clean, "/")
	for _, d := range SupportDirs {
		if top == d && nested {
			return clean, nil
		}
	}
	return "", fmt.Errorf("file path %q must be inside one of %s/ (SKILL.md itself is changed with edit or patch)", p, strings.Join(SupportDirs, "/, "))
}
