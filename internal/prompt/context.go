package prompt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
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

// FindContextFile returns the path of the one project context file that
// applies to cwd, or "" (Hermes "prompt-assembly.md", context files): the
// nearest .hermes.md or HERMES.md from cwd up to the git root (cwd only
// when cwd is not inside a git work tree, so a file planted in a parent
// such as /tmp is not picked up), else AGENTS.md, else CLAUDE.md, else
// .cursorrules in cwd. Only one file is loaded.
func FindContextFile(cwd string) string {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return ""
	}
	root := gitRoot(abs)
	for dir := abs; ; dir = filepath.Dir(dir) {
		for _, name := range []string{".hermes.md", "HERMES.md"} {
			if isFile(filepath.Join(dir, name)) {
				return filepath.Join(dir, name)
			}
		}
		if root == "" || dir == root || filepath.Dir(dir) == dir {
			break
		}
	}
	for _, name := range []string{"AGENTS.md", "CLAUDE.md", ".cursorrules"} {
		if isFile(filepath.Join(abs, name)) {
			return filepath.Join(abs, name)
		}
	}
	return ""
}

// LoadContextFile reads the project context file for cwd (FindContextFile),
// strips YAML frontmatter, scans it (Scan) and cuts it to maxChars
// characters (0 = DefaultContextMaxChars) with TruncateHeadTail. It returns
// nil, nil when there is no context file.
func LoadContextFile(cwd string, maxChars int) (*ContextFile, error) {
	path := FindContextFile(cwd)
	if path == "" {
		return nil, nil
	}
	return loadScanned(path, maxChars)
}

// loadScanned reads, de-frontmatters, scans and truncates one file.
func loadScanned(path string, maxChars int) (*ContextFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read context file: %w", err)
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
	return &ContextFile{Path: path, Name: name, Content: strings.TrimSpace(cut), Findings: findings, Truncated: truncated}, nil
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

func isFile(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	return st.Mode().IsRegular()
}
