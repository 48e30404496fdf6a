package skills

import (
	"errors"
	"fmt"
	"github.com/hermes-go/hermes/internal/memory"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
)

// Refusal is an error caused by the request (bad name, invalid SKILL.md,
// no or several matches of a patch, a path leaving the skill folder);
// nothing was changed. skill_manage shows it to the model as an error
// result.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

func refusef(format string, a ...any) error { return &Refusal{Reason: fmt.Sprintf(format, a...)} }

// MaxSupportFileBytes caps a file written with WriteFile.
const MaxSupportFileBytes = 1 << 20

// CreateDir is the root new skills are created in: the first Local root.
func (l *Library) CreateDir() (string, error) {
	for _, r := range l.roots {
		if r.Kind == Local {
			return r.Dir, nil
		}
	}
	return "", fmt.Errorf("no local skills directory configured")
}

// ValidateContent checks a whole SKILL.md before it is written: the
// frontmatter must be strict YAML (no lenient fallback, so other
// agentskills.io readers accept it), name must equal want, description must
// be present and within MaxDescriptionChars, and the file within
// MaxSkillBytes.
func ValidateContent(want, content string) error {
	if len(content) > MaxSkillBytes {
		return refusef("SKILL.md is %d bytes, over the %d KiB limit; move detail into references/ files", len(content), MaxSkillBytes>>10)
	}
	res, err := Parse([]byte(content))
	if err != nil {
		return refusef("invalid SKILL.md: %v", err)
	}
	for _, w := range res.Warnings {
		return refusef("invalid SKILL.md: %s", w)
	}
	if res.Front.Name != want {
		return refusef("invalid SKILL.md: frontmatter name is %q, it must be %q", res.Front.Name, want)
	}
	if strings.TrimSpace(res.Body) == "" {
		return refusef("invalid SKILL.md: the body after the frontmatter is empty; write the procedure (When to Use, Procedure, Pitfalls, Verification)")
	}
	return scanContent("SKILL.md", content)
}

// scanContent refuses skill text that memory.ScanThreats flags (the rules
// memory entries get): a skill is preloaded and followed like instructions,
// so "ignore all previous instructions", hidden unicode or secret
// exfiltration must not get in through one.
func scanContent(what, content string) error {
	found := memory.ScanThreats(content)
	if len(found) == 0 {
		return nil
	}
	t := found[0]
	if cp, ok := strings.CutPrefix(t.ID, "invisible_unicode_"); ok {
		return refusef("Blocked: %s contains the invisible unicode character %s (possible prompt injection); remove it and retry", what, cp)
	}
	return refusef("Blocked: %s contains %q, which matches threat pattern %s: a skill is loaded as instructions, "+
		"so it must not carry prompt injection or secret exfiltration; remove or reword that text and retry", what, t.Match, t.ID)
}

// Create writes a new skill to <create dir>/<category>/<name>/SKILL.md
// (category "" = DefaultCategory) after ValidateName, ValidateCategory and
// ValidateContent. A skill of that name in any root is not overwritten.
func (l *Library) Create(name, category, content string) (*Skill, error) {
	if err := ValidateName(name); err != nil {
		return nil, &Refusal{Reason: err.Error()}
	}
	if category = strings.TrimSpace(category); category == "" {
		category = DefaultCategory
	}
	if err := ValidateCategory(category); err != nil {
		return nil, &Refusal{Reason: err.Error()}
	}
	if err := ValidateContent(name, content); err != nil {
		return nil, err
	}
	if s, err := l.Get(name); err == nil {
		return nil, refusef("skill %q already exists at %s; change it with patch or edit, or delete it first", name, s.Path)
	}
	base, err := l.CreateDir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(base, category, name)
	if _, err := os.Lstat(dir); err == nil {
		return nil, refusef("folder %s already exists but holds no valid skill; remove it or pick another name", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating skill folder: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, FileName), content); err != nil {
		os.Remove(dir)
		return nil, err
	}
	return l.Get(name)
}

// writable returns the skill called name when it is in a Local root; skills
// of external and project roots are read-only to the agent.
func (l *Library) writable(name string) (*Skill, error) {
	s, err := l.Get(name)
	if err != nil {
		var unknown *UnknownSkillError
		if errors.As(err, &unknown) {
			return nil, &Refusal{Reason: err.Error()}
		}
		return nil, err
	}
	if s.Root.Kind != Local {
		return nil, refusef("skill %q is in the %s skills directory %s, which hermes does not change; copy it to HERMES_HOME/skills to edit it", name, s.Root.Kind, s.Root.Dir)
	}
	return s, nil
}

// Patch replaces the one exact occurrence of oldString with newString in
// SKILL.md, or in filePath of the skill folder when filePath is not "". No
// occurrence or several are a *Refusal; a patched SKILL.md must still pass
// ValidateContent.
func (l *Library) Patch(name, filePath, oldString, newString string) error {
	s, err := l.writable(name)
	if err != nil {
		return err
	}
	if oldString == "" {
		return refusef("old_string is empty: give the exact text to replace")
	}
	target, rel := s.Path, FileName
	if filePath != "" && filePath != FileName {
		if rel, err = CleanFilePath(filePath); err != nil {
			return &Refusal{Reason: err.Error()}
		}
		target = ""
	}
	var text string
	if target != "" {
		text = s.Raw
	} else if text, err = s.ReadFile(rel); err != nil {
		return &Refusal{Reason: err.Error()}
	}
	switch n := strings.Count(text, oldString); n {
	case 0:
		return refusef("old_string not found in %s of skill %q; view the skill and copy the text exactly (whitespace included)", rel, name)
	case 1:
	default:
		return refusef("old_string occurs %d times in %s of skill %q; include more surrounding text so it matches once", n, rel, name)
	}
	next := strings.Replace(text, oldString, newString, 1)
	if target != "" {
		if err := ValidateContent(name, next); err != nil {
			return err
		}
		return writeAtomic(s.Path, next)
	}
	return writeInSkill(s.Dir, rel, next)
}

// Edit replaces the whole SKILL.md with content after ValidateContent.
func (l *Library) Edit(name, content string) error {
	s, err := l.writable(name)
	if err != nil {
		return err
	}
	if err := ValidateContent(name, content); err != nil {
		return err
	}
	return writeAtomic(s.Path, content)
}

// Delete removes the skill folder and everything in it.
func (l *Library) Delete(name string) (*Skill, error) {
	s, err := l.writable(name)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return nil, fmt.Errorf("deleting %s: %w", s.Dir, err)
	}
	return s, nil
}

// WriteFile writes a supporting file (under references/, templates/,
// scripts/, examples/ or assets/) of the skill, creating folders, atomically.
// The path cannot leave the skill folder: ".." and absolute paths are
// refused and the write goes through an os.Root, so a symbolic link
// pointing outside fails too.
func (l *Library) WriteFile(name, filePath, content string) (string, error) {
	s, err := l.writable(name)
	if err != nil {
		return "", err
	}
	rel, err := supportFilePath(filePath)
	if err != nil {
		return "", &Refusal{Reason: err.Error()}
	}
	if len(content) > MaxSupportFileBytes {
		return "", refusef("file_content is %d bytes, over the %d KiB limit", len(content), MaxSupportFileBytes>>10)
	}
	if err := scanContent(rel, content); err != nil {
		return "", err
	}
	if err := writeInSkill(s.Dir, rel, content); err != nil {
		return "", err
	}
	return filepath.Join(s.Dir, filepath.FromSlash(rel)), nil
}

// RemoveFile deletes a supporting file of the skill, with the path rules of
// WriteFile.
func (l *Library) RemoveFile(name, filePath string) error {
	s, err := l.writable(name)
	if err != nil {
		return err
	}
	rel, err := supportFilePath(filePath)
	if err != nil {
		return &Refusal{Reason: err.Error()}
	}
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	st, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return refusef("skill %q has no file %q", name, rel)
	}
	if err != nil {
		return &Refusal{Reason: fmt.Sprintf("cannot reach %q in skill %q: %v", rel, name, errors.Unwrap(err))}
	}
	if st.IsDir() {
		return refusef("%q in skill %q is a folder; remove its files one by one", rel, name)
	}
	return root.Remove(rel)
}

// writeInSkill writes rel inside dir through os.Root (no escape by "..",
// or by symbolic links at any level) with an atomic replace.
func writeInSkill(dir, rel, content string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	sub := root
	if parent := filepath.Dir(filepath.FromSlash(rel)); parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return &Refusal{Reason: fmt.Sprintf("cannot create folder %q in the skill: %v", parent, errors.Unwrap(err))}
		}
		if sub, err = root.OpenRoot(parent); err != nil {
			return &Refusal{Reason: fmt.Sprintf("cannot open folder %q in the skill: %v", parent, errors.Unwrap(err))}
		}
		defer sub.Close()
	}
	base := filepath.Base(rel)
	if st, err := sub.Lstat(base); err == nil && st.Mode()&os.ModeSymlink != 0 {
		return refusef("%q in the skill is a symbolic link; remove it first", rel)
	}
	if err := renameio.WriteFile(base, []byte(content), 0o644, renameio.WithRoot(sub)); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, rel), err)
	}
	return nil
}

// writeAtomic replaces path (temp file in the same folder, fsync, rename).
func writeAtomic(path, content string) error {
	if err := renameio.WriteFile(path, []byte(content), 0o644, renameio.WithTempDir(filepath.Dir(path))); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
