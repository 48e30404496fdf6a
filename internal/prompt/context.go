package prompt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/workspacefile"
)

// DefaultContextMaxChars is the cap on a context file in the system
// prompt, in characters (Hermes "context_file_max_chars" base value).
const DefaultContextMaxChars = 20000

// ContextFile is a project context file ready for the system prompt.
type ContextFile struct {
	// Path is the file's absolute path; Name its base name (e.g. AGENTS.md).
	Path string
	Name string
	// Content is the text after frontmatter stripping, the injection scan
	// and truncation.
	Content string
	// Findings are the injection patterns that were blocked.
	Findings []Finding
	// Truncated reports that the middle was cut to fit the cap.
	Truncated bool
}

// MaxContextFileBytes bounds a project context file or SOUL.md read from
// disk, in bytes; a larger file is refused (not read) with a warning.
// Files within it are then cut to the character cap (TruncateHeadTail).
const MaxContextFileBytes = 1 << 20

// contextNamesUp are looked for from cwd up to the git root, nearest
// first; contextNamesHere only in cwd, in this order.
var (
	contextNamesUp   = []string{".hermes.md", "HERMES.md"}
	contextNamesHere = []string{"AGENTS.md", "CLAUDE.md", ".cursorrules"}
)

// FindContextFile returns the path of the one project context file that
// applies to cwd, or "" (Hermes "prompt-assembly.md", context files): the
// nearest .hermes.md or HERMES.md from cwd up to the git root (cwd only
// when cwd is not inside a git work tree, so a file planted in a parent
// such as /tmp is not picked up), else AGENTS.md, else CLAUDE.md, else
// .cursorrules in cwd. Only one file is loaded. home is HERMES_HOME; a
// candidate the workspace reader refuses (see LoadContextFile) is passed
// over.
func FindContextFile(cwd, home string) string {
	cf, _, _ := LoadContextFile(cwd, home, 0)
	if cf == nil {
		return ""
	}
	return cf.Path
}

// LoadContextFile reads the project context file for cwd (the search of
// FindContextFile), strips YAML frontmatter, scans it (Scan) and cuts it
// to maxChars characters (0 = DefaultContextMaxChars) with
// TruncateHeadTail. It returns nil when there is no context file.
//
// The files are workspace content a command or a box may have written, so
// each is read with a workspacefile.Reader rooted at its own directory: a
// symbolic link out of it (to HERMES_HOME/.env, /proc/self/root/...), a
// hard link to one of HERMES_HOME's (home) protected files, a FIFO, a
// socket, a device, a directory, a name with control characters or a file
// over MaxContextFileBytes is not loaded and the search goes on; each such
// refusal is one line in refused ("AGENTS.md is a symbolic link to a path
// outside the workspace; not loaded"). err is a failure to read HERMES_HOME
// or a directory; the prompt is then built without project context.
func LoadContextFile(cwd, home string, maxChars int) (cf *ContextFile, refused []string, err error) {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return nil, nil, err
	}
	pf, err := local.LoadProtectedFiles(home)
	if err != nil {
		return nil, nil, fmt.Errorf("project context not loaded: %w", err)
	}
	root := gitRoot(abs)
	for dir := abs; ; dir = filepath.Dir(dir) {
		b, path, why, err := readFirst(dir, abs, contextNamesUp, pf)
		refused = append(refused, why...)
		if err != nil || path != "" {
			return scanned(path, b, maxChars), refused, err
		}
		if root == "" || dir == root || filepath.Dir(dir) == dir {
			break
		}
	}
	b, path, why, err := readFirst(abs, abs, contextNamesHere, pf)
	refused = append(refused, why...)
	if err != nil || path == "" {
		return nil, refused, err
	}
	return scanned(path, b, maxChars), refused, nil
}

// readFirst reads the first of names in dir that the workspace reader
// hands out; path is "" when there is none. Refusals are returned as
// lines naming the file relative to cwd.
func readFirst(dir, cwd string, names []string, pf *local.ProtectedFiles) (b []byte, path string, refused []string, err error) {
	r, err := workspacefile.OpenWith(dir, pf)
	if err != nil {
		return nil, "", nil, fmt.Errorf("project context not loaded: %w", err)
	}
	defer r.Close()
	for _, name := range names {
		b, err := r.ReadFile(name, MaxContextFileBytes)
		var re *workspacefile.RefusedError
		switch {
		case err == nil:
			return b, filepath.Join(dir, name), refused, nil
		case errors.As(err, &re):
			if rel, rerr := filepath.Rel(cwd, filepath.Join(dir, name)); rerr == nil {
				re.Name = rel
			}
			refused = append(refused, re.Error()+"; not loaded")
		case !errors.Is(err, fs.ErrNotExist):
			refused = append(refused, fmt.Sprintf("%s: %v; not loaded", name, errors.Unwrap(err)))
		}
	}
	return nil, "", refused, nil
}

// scanned de-frontmatters, scans and truncates the content b of path
// (nil when path is "").
func scanned(path string, b []byte, maxChars int) *ContextFile {
	if path == "" {
		return nil
	}
	if !utf8.Valid(b) {
		b = []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
	}
	name := filepath.Base(path)
	text := StripFrontmatter(string(b))
	clean, findings := Scan(text)
	if maxChars <= 0 {
		maxChars = DefaultContextMaxChars
	}
	cut, truncated := TruncateHeadTail(clean, maxChars, name)
	return &ContextFile{Path: path, Name: name, Content: strings.TrimSpace(cut), Findings: findings, Truncated: truncated}
}

// loadSoul reads HERMES_HOME's SOUL.md (the user's own file, so links are
// followed), bounded by MaxContextFileBytes; nil, nil when there is none.
func loadSoul(path string, maxChars int) (*ContextFile, error) {
	b, err := workspacefile.ReadHostFile(path, MaxContextFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("SOUL.md not loaded: %w", err)
	}
	return scanned(path, b, maxChars), nil
}

// StripFrontmatter removes a leading "---" YAML frontmatter block (and a
// UTF-8 BOM) so only the markdown body remains. Text without a closing
// "---" line is returned unchanged.
func StripFrontmatter(text string) string {
	text = strings.TrimPrefix(text, "\uFEFF")
	lines := strings.SplitAfter(text, "\n")
	if strings.TrimSpace(lines[0]) != "---" {
		return text
	}
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			return strings.TrimLeft(strings.Join(lines[i+1:], ""), "\r\n")
		}
	}
	return text
}

// TruncateHeadTail keeps text within maxChars characters: past the cap it
// keeps the first 70% and the last 20% and puts a visible marker naming
// name and the number of characters cut in between (Hermes
// "prompt-assembly.md": head/tail truncation 70/20).
func TruncateHeadTail(text string, maxChars int, name string) (string, bool) {
	r := []rune(text)
	if len(r) <= maxChars {
		return text, false
	}
	head := maxChars * 7 / 10
	tail := maxChars * 2 / 10
	cut := len(r) - head - tail
	marker := fmt.Sprintf("\n\n[... %d characters of %s cut here to fit the context limit; read the file for the rest ...]\n\n", cut, name)
	return string(r[:head]) + marker + string(r[len(r)-tail:]), true
}

// gitRoot returns the nearest directory at or above dir that has a .git
// entry, or "".
func gitRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}
