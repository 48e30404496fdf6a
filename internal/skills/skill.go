// Package skills reads, indexes and changes agent skills in the
// agentskills.io format (https://agentskills.io/specification; Hermes docs
// "skills.md"): a folder per skill holding SKILL.md (YAML frontmatter with
// name and description, then Markdown instructions) and optional
// references/, templates/, scripts/, examples/ and assets/ folders.
//
// Skills live in roots: HERMES_HOME/skills/<category>/<name>/ (where new
// skills are created), the directories of config skills.external_dirs, and a
// project's .hermes/skills/. A malformed SKILL.md never stops a run: it is
// read leniently or skipped with a Diagnostic naming the file and the
// reason.
package skills

import (
	"bytes"
	"fmt"
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
)

// FileName is the name of a skill's main file.
const FileName = "SKILL.md"

// Limits applied when reading and writing skills.
const (
	// MaxFrontmatterBytes caps the YAML frontmatter; a larger one is skipped.
	MaxFrontmatterBytes = 64 << 10
	// MaxSkillBytes caps SKILL.md; a larger file is skipped.
	MaxSkillBytes = 1 << 20
	// MaxDescriptionChars is the agentskills.io limit for description.
	MaxDescriptionChars = 1024
	// MaxNameChars is the agentskills.io limit for name.
	MaxNameChars = 64
)

// Skill is one parsed skill.
type Skill struct {
	// Name is the frontmatter name (the folder name when it has none).
	Name        string
	Description string
	Version     string   // "" when absent
	Platforms   []string // macos, linux, windows; empty = all
	Metadata    map[string]any
	// Category is the folder between the root and the skill folder, "" for
	// a skill directly under its root.
	Category string
	// Dir is the skill folder; Path its SKILL.md.
	Dir, Path string
	// Root is the root the skill was found in.
	Root Root
	// Raw is the whole SKILL.md as read (BOM removed, line ends as on disk);
	// Body the Markdown after the frontmatter.
	Raw, Body string
}

// Diagnostic is a problem found in a skill file. When Skipped is set the
// skill could not be used; otherwise it was read but is not portable.
type Diagnostic struct {
	Path    string
	Reason  string
	Skipped bool
}

func (d Diagnostic) String() string {
	if d.Skipped {
		return fmt.Sprintf("%s: %s (skipped)", d.Path, d.Reason)
	}
	return fmt.Sprintf("%s: %s", d.Path, d.Reason)
}

// Frontmatter is the parsed head of a SKILL.md.
type Frontmatter struct {
	Name, Description, Version string
	Platforms                  []string
	Metadata                   map[string]any
}

// ParseResult is what Parse found.
type ParseResult struct {
	Front Frontmatter
	Body  string
	// Warnings are problems that did not prevent reading (e.g. a
	// description that needed the lenient fallback).
	Warnings []string
}

var frontmatterKey = lazyregexp.New(`^([A-Za-z_][A-Za-z0-9_-]*):[ \t]*(.*)$`)

// Parse reads a SKILL.md. It accepts a UTF-8 BOM, CRLF line ends and
// "---" rules inside the body (only the first "---" line after the opening
// one closes the frontmatter). When the frontmatter is not valid YAML (the
// usual cause is an unquoted colon in description), top-level "key: rest of
// line" pairs are read instead and a warning says so. It fails when there is
// no frontmatter, it is not closed, it is over MaxFrontmatterBytes, or it
// has no description.
func Parse(raw []byte) (ParseResult, error) {
	var res ParseResult
	raw = bytes.TrimPrefix(raw, []byte("\ufeff"))
	if !utf8.Valid(raw) {
		return res, fmt.Errorf("not valid UTF-8 text")
	}
	text := strings.ReplaceAll(string(raw), "\r\n", "\n")
	trimmed := strings.TrimLeft(text, " \t\n")
	first, rest, _ := strings.Cut(trimmed, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return res, fmt.Errorf("no YAML frontmatter: the file must start with a line \"---\", then name: and description:, then \"---\"")
	}
	var head string
	closed := false
	for offset := 0; offset <= len(rest); {
		line, _, _ := strings.Cut(rest[offset:], "\n")
		if strings.TrimRight(line, " \t") == "---" {
			head, res.Body = rest[:offset], rest[min(len(rest), offset+len(line)+1):]
			closed = true
			break
		}
		offset += len(line) + 1
		if offset > MaxFrontmatterBytes {
			return res, fmt.Errorf("frontmatter larger than %d KiB (or never closed by a \"---\" line)", MaxFrontmatterBytes>>10)
		}
	}
	if !closed {
		return res, fmt.Errorf("frontmatter is never closed: add a line \"---\" after description")
	}
	if len(head) > MaxFrontmatterBytes {
		return res, fmt.Errorf("frontmatter larger than %d KiB", MaxFrontmatterBytes>>10)
	}

	var fields map[string]any
	if err := yaml.Unmarshal([]byte(head), &fields); err != nil {
		fields = lenientFields(head)
		if fields == nil {
			return res, fmt.Errorf("frontmatter is not valid YAML: %s", firstLine(err.Error()))
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("frontmatter is not valid YAML (%s); read as plain key: value lines — quote values that contain \": \"", firstLine(err.Error())))
	}
	f := &res.Front
	f.Name = scalar(fields["name"])
	f.Description = strings.TrimSpace(scalar(fields["description"]))
	f.Version = scalar(fields["version"])
	// Scalars decoded as text keep their spelling (version: 1.0 stays "1.0").
	var asText struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
		Version     string `yaml:"version"`
	}
	if len(res.Warnings) == 0 && yaml.Unmarshal([]byte(head), &asText) == nil {
		f.Name, f.Description, f.Version = asText.Name, strings.TrimSpace(asText.Description), asText.Version
	}
	switch p := fields["platforms"].(type) {
	case string:
		f.Platforms = []string{p}
	case []any:
		for _, v := range p {
			f.Platforms = append(f.Platforms, scalar(v))
		}
	}
	if m, ok := fields["metadata"].(map[string]any); ok {
		f.Metadata = m
	}
	if f.Description == "" {
		return res, fmt.Errorf("frontmatter has no description: add description: one line saying when to use the skill")
	}
	if n := utf8.RuneCountInString(f.Description); n > MaxDescriptionChars {
		res.Warnings = append(res.Warnings, fmt.Sprintf("description is %d chars, over the %d-char limit of agentskills.io", n, MaxDescriptionChars))
	}
	return res, nil
}

// lenientFields reads top-level "key: value" lines, the value being the rest
// of the line (surrounding quotes removed); indented lines continue a
// value. It returns nil when no line has that shape.
func lenientFields(head string) map[string]any {
	fields := map[string]any{}
	last := ""
	for line := range strings.SplitSeq(head, "\n") {
		if m := frontmatterKey().FindStringSubmatch(line); m != nil {
			last = m[1]
			fields[last] = unquote(strings.TrimSpace(m[2]))
			continue
		}
		if last != "" && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) {
			if s, ok := fields[last].(string); ok {
				fields[last] = strings.TrimSpace(s + " " + strings.TrimSpace(line))
			}
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return fields
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// scalar renders a YAML scalar as text (version: 1.0 is a float to YAML).
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(x)
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// SupportsPlatform reports whether the skill is for goos (runtime.GOOS;
// "darwin" matches "macos"). A skill without platforms supports all.
func (s *Skill) SupportsPlatform(goos string) bool {
	if len(s.Platforms) == 0 {
		return true
	}
	want := goos
	if goos == "darwin" {
		want = "macos"
	}
	for _, p := range s.Platforms {
		if p := strings.ToLower(strings.TrimSpace(p)); p == want || p == goos {
			return true
		}
	}
	return false
}
