package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/workspacefile"
)

// RootKind says where a root comes from; it sets precedence when two roots
// hold a skill of the same name (project > local > external, as Hermes).
type RootKind int

// Root kinds, lowest precedence first.
const (
	External RootKind = iota // a directory of config skills.external_dirs
	Local                    // HERMES_HOME/skills: new skills are created here
	Project                  // <working dir>/.hermes/skills
)

func (k RootKind) String() string {
	switch k {
	case Local:
		return "local"
	case Project:
		return "project"
	}
	return "external"
}

// Root is a directory holding skills, as <category>/<name>/SKILL.md or
// <name>/SKILL.md. A missing directory is an empty root.
type Root struct {
	Dir  string
	Kind RootKind
	// Workspace and HermesHome are set on a Project root: its files are
	// read beneath Workspace (the working directory), never through a link
	// out of it, and HERMES_HOME's protected files are refused.
	Workspace, HermesHome string
}

// Roots returns the discovery roots of a session: HERMES_HOME/skills (home
// is HERMES_HOME), each of externalDirs (a leading "~/" is the user's home
// directory from userHome; relative paths are relative to home) and
// workDir/.hermes/skills when workDir is not "".
func Roots(home string, externalDirs []string, workDir, userHome string) []Root {
	roots := []Root{{Dir: filepath.Join(home, "skills"), Kind: Local}}
	for _, d := range externalDirs {
		d = strings.TrimSpace(d)
		switch {
		case d == "":
			continue
		case strings.HasPrefix(d, "~/") && userHome != "":
			d = filepath.Join(userHome, d[2:])
		case !filepath.IsAbs(d):
			d = filepath.Join(home, d)
		}
		roots = append(roots, Root{Dir: d, Kind: External})
	}
	if workDir != "" {
		roots = append(roots, Root{Dir: filepath.Join(workDir, ".hermes", "skills"), Kind: Project, Workspace: workDir, HermesHome: home})
	}
	return roots
}

// Library finds skills in its roots. It re-reads the disk on every call
// (skills are small and few), so writes by skill_manage or another process
// are seen at once; the session's index is rendered once by the caller.
type Library struct {
	roots []Root
	goos  string
}

// NewLibrary returns a library over roots. Skills are written to the first
// Local root.
func NewLibrary(roots ...Root) *Library {
	return &Library{roots: roots, goos: runtime.GOOS}
}

// Roots returns the library's roots.
func (l *Library) Roots() []Root { return append([]Root(nil), l.roots...) }

// Scan reads every skill of every root. Skills are returned sorted by
// category then name; when two roots hold the same name, the one of higher
// precedence wins. Diagnostics list every file that was skipped or read
// with a problem, sorted by path. Scan never fails: an unreadable directory
// is a diagnostic.
func (l *Library) Scan() ([]*Skill, []Diagnostic) {
	byName := map[string]*Skill{}
	var diags []Diagnostic
	for _, root := range l.roots {
		found, d := scanRoot(root)
		diags = append(diags, d...)
		for _, s := range found {
			prev, dup := byName[s.Name]
			switch {
			case !dup:
				byName[s.Name] = s
			case prev.Root.Kind == root.Kind:
				diags = append(diags, Diagnostic{Path: s.Path, Reason: fmt.Sprintf("duplicate skill name %q (also %s); this one is ignored", s.Name, prev.Path), Skipped: true})
			case root.Kind > prev.Root.Kind:
				byName[s.Name] = s
			}
		}
	}
	out := make([]*Skill, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Category != out[j].Category {
			return out[i].Category < out[j].Category
		}
		return out[i].Name < out[j].Name
	})
	sort.SliceStable(diags, func(i, j int) bool { return diags[i].Path < diags[j].Path })
	return out, diags
}

func scanRoot(root Root) ([]*Skill, []Diagnostic) {
	t, err := openTree(root)
	if err != nil {
		return nil, []Diagnostic{{Path: root.Dir, Reason: "cannot read skills directory: " + err.Error(), Skipped: true}}
	}
	defer t.close()
	entries, err := t.readDir(root.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []Diagnostic{{Path: root.Dir, Reason: "cannot read skills directory: " + refusal(err), Skipped: true}}
	}
	var skills []*Skill
	var diags []Diagnostic
	add := func(dir, category string) {
		s, d := readSkill(t, root, dir, category)
		diags = append(diags, d...)
		if s != nil {
			skills = append(skills, s)
		}
	}
	// folder reports whether e of parent is a folder to look into; a
	// refused one (a project skill folder linked out of the workspace) is
	// a diagnostic.
	folder := func(parent string, e fs.DirEntry) bool {
		if strings.HasPrefix(e.Name(), ".") {
			return false
		}
		ok, err := t.isDir(parent, e)
		if errors.Is(err, workspacefile.ErrRefused) {
			diags = append(diags, Diagnostic{Path: filepath.Join(parent, e.Name()), Reason: refusal(err), Skipped: true})
		}
		return ok && err == nil
	}
	// hasSkill reports whether dir holds a SKILL.md (a refused one is a
	// diagnostic and counts as none).
	hasSkill := func(dir string) bool {
		ok, err := t.exists(filepath.Join(dir, FileName))
		if err != nil {
			diags = append(diags, Diagnostic{Path: filepath.Join(dir, FileName), Reason: refusal(err), Skipped: true})
		}
		return ok
	}
	for _, e := range entries {
		if !folder(root.Dir, e) {
			continue
		}
		dir := filepath.Join(root.Dir, e.Name())
		if hasSkill(dir) {
			add(dir, "")
			continue
		}
		subs, err := t.readDir(dir)
		if err != nil {
			diags = append(diags, Diagnostic{Path: dir, Reason: "cannot read category directory: " + refusal(err), Skipped: true})
			continue
		}
		for _, sub := range subs {
			if !folder(dir, sub) {
				continue
			}
			skillDir := filepath.Join(dir, sub.Name())
			if hasSkill(skillDir) {
				add(skillDir, e.Name())
			}
		}
	}
	return skills, diags
}

// refusal is the reason of a workspace refusal, without the path the
// Diagnostic already names.
func refusal(err error) string {
	var re *workspacefile.RefusedError
	if errors.As(err, &re) {
		return re.Reason + "; not loaded"
	}
	return err.Error()
}

// readSkill parses dir/SKILL.md; it returns nil when the skill is skipped.
func readSkill(t tree, root Root, dir, category string) (*Skill, []Diagnostic) {
	path := filepath.Join(dir, FileName)
	skip := func(reason string) (*Skill, []Diagnostic) {
		return nil, []Diagnostic{{Path: path, Reason: reason, Skipped: true}}
	}
	raw, err := t.readFile(path, MaxSkillBytes)
	var re *workspacefile.RefusedError
	switch {
	case errors.As(err, &re) && re.Kind == workspacefile.TooLarge:
		return skip(fmt.Sprintf("file larger than %d KiB", MaxSkillBytes>>10))
	case err != nil:
		return skip("cannot read: " + refusal(err))
	}
	res, err := Parse(raw)
	if err != nil {
		return skip(err.Error())
	}
	var diags []Diagnostic
	for _, w := range res.Warnings {
		diags = append(diags, Diagnostic{Path: path, Reason: w})
	}
	folder := filepath.Base(dir)
	name := res.Front.Name
	switch {
	case name == "":
		name = folder
		diags = append(diags, Diagnostic{Path: path, Reason: fmt.Sprintf("frontmatter has no name; using the folder name %q", folder)})
	case name != folder:
		diags = append(diags, Diagnostic{Path: path, Reason: fmt.Sprintf("name %q differs from its folder %q; rename one so they match", name, folder)})
	}
	if err := ValidateName(name); err != nil {
		return nil, append(diags, Diagnostic{Path: path, Reason: err.Error(), Skipped: true})
	}
	if category != "" {
		if err := ValidateCategory(category); err != nil {
			diags = append(diags, Diagnostic{Path: path, Reason: err.Error()})
		}
	}
	text := strings.TrimPrefix(string(raw), "\ufeff")
	return &Skill{
		Name: name, Description: res.Front.Description, Version: res.Front.Version,
		Platforms: res.Front.Platforms, Metadata: res.Front.Metadata,
		Category: category, Dir: dir, Path: path, Root: root,
		Raw: text, Body: res.Body,
	}, diags
}

// List returns the skills for this platform, only those of category when it
// is not "", with the diagnostics of Scan.
func (l *Library) List(category string) ([]*Skill, []Diagnostic) {
	all, diags := l.Scan()
	var out []*Skill
	for _, s := range all {
		if (category == "" || s.Category == category) && s.SupportsPlatform(l.goos) {
			out = append(out, s)
		}
	}
	return out, diags
}

// Check returns every problem of every root (hermes skills check): skipped
// files and files read with a problem. Empty means all skills are sound.
func (l *Library) Check() []Diagnostic {
	_, diags := l.Scan()
	return diags
}

// UnknownSkillError is returned for a name no root holds.
type UnknownSkillError struct {
	Name      string
	Available []string
}

func (e *UnknownSkillError) Error() string {
	if len(e.Available) == 0 {
		return fmt.Sprintf("unknown skill %q: no skills are installed (create one with skill_manage or `hermes skills create`)", e.Name)
	}
	return fmt.Sprintf("unknown skill %q; available skills: %s", e.Name, strings.Join(e.Available, ", "))
}

// Get returns the skill called name, or an *UnknownSkillError listing the
// available names.
func (l *Library) Get(name string) (*Skill, error) {
	all, _ := l.Scan()
	return find(all, strings.TrimSpace(name))
}

func find(all []*Skill, name string) (*Skill, error) {
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	sort.Strings(names)
	return nil, &UnknownSkillError{Name: name, Available: names}
}

// Load returns the named skills with their full SKILL.md, in the order
// given, duplicates dropped (the -s/--skills preload). The first unknown
// name is an *UnknownSkillError listing the available skills; a skill that
// fails the injection scan (scanContent) is an error naming its file.
func (l *Library) Load(names []string) ([]*Skill, error) {
	all, _ := l.Scan()
	var out []*Skill
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		s, err := find(all, n)
		if err != nil {
			return nil, err
		}
		if err := scanContent(s.Path, s.Raw); err != nil {
			return nil, fmt.Errorf("skill %s not preloaded: %w", n, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// FormatPreload renders loaded skills as the text placed in the first turn
// (one block per skill: a header naming the skill and its folder, then its
// SKILL.md).
func FormatPreload(loaded []*Skill) string {
	var b strings.Builder
	for i, s := range loaded {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[The %q skill is loaded. Follow its instructions. Its files are in %s.]\n\n%s", s.Name, s.Dir, strings.TrimSpace(s.Raw))
	}
	return b.String()
}

// maxIndexDescription caps one description in the index (runes).
const maxIndexDescription = 200

// Bounds of the skills index in the system prompt. A box or a guarded
// command can plant any number of project skills (.hermes/skills of the
// working directory), so their share is capped in count, and the whole
// index in bytes; what is left out is counted in a closing line.
const (
	maxIndexProjectSkills = 100
	maxIndexBytes         = 48 << 10
)

// indexed splits list into the skills the index shows (every non-project
// skill first, then at most maxIndexProjectSkills project skills by name)
// and the number left out.
func indexed(list []*Skill) (shown []*Skill, omitted int) {
	var project []*Skill
	for _, s := range list {
		if s.Root.Kind == Project {
			project = append(project, s)
		} else {
			shown = append(shown, s)
		}
	}
	sort.Slice(project, func(i, j int) bool { return project[i].Name < project[j].Name })
	if len(project) > maxIndexProjectSkills {
		omitted = len(project) - maxIndexProjectSkills
		project = project[:maxIndexProjectSkills]
	}
	return append(shown, project...), omitted
}

// Index renders the compact skills index of the system prompt: skills for
// this platform grouped by category (uncategorised under "general"), sorted,
// one "- name: description" line each, inside <available_skills>. The same
// skills always give the same bytes. No skills gives "". At most
// maxIndexProjectSkills project skills and about maxIndexBytes bytes are
// listed; a closing line counts the skills left out (skills_list shows all).
func (l *Library) Index() string {
	all, _ := l.List("")
	if len(all) == 0 {
		return ""
	}
	list, omitted := indexed(all)
	groups := map[string][]*Skill{}
	for _, s := range list {
		c := s.Category
		if c == "" {
			c = DefaultCategory
		}
		groups[c] = append(groups[c], s)
	}
	cats := make([]string, 0, len(groups))
	for c := range groups {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	var b strings.Builder
	b.WriteString("## Skills\n")
	b.WriteString("Skills are saved procedures. Before starting a task, check the list below: if a skill matches, load it with skill_view(name) and follow it. ")
	b.WriteString("After a non-trivial, multi-step task (or one where you recovered from errors or were corrected), save the procedure with skill_manage(action=\"create\"), or fix an outdated skill with skill_manage(action=\"patch\").\n")
	b.WriteString("<available_skills>\n")
	for _, c := range cats {
		skills := groups[c]
		sort.Slice(skills, func(i, j int) bool { return skills[i].Name < skills[j].Name })
		if b.Len() >= maxIndexBytes {
			omitted += len(skills)
			continue
		}
		b.WriteString(c + ":\n")
		for _, s := range skills {
			if b.Len() >= maxIndexBytes {
				omitted++
				continue
			}
			fmt.Fprintf(&b, "- %s: %s\n", s.Name, oneLine(s.Description, maxIndexDescription))
		}
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "(%d more skills are not listed here; skills_list shows them all.)\n", omitted)
	}
	b.WriteString("</available_skills>")
	return b.String()
}

func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > limit {
		return string([]rune(s)[:limit-1]) + "…"
	}
	return s
}

// maxSkillFiles bounds the files Files lists.
const maxSkillFiles = 10000

// Files lists the files of a skill folder other than SKILL.md, as
// slash-separated paths relative to the folder, sorted. Symbolic links are
// listed but not followed; hidden files and folders are left out.
func (s *Skill) Files() ([]string, error) {
	r, err := s.folder()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []string
	var walk func(rel string) error
	walk = func(rel string) error {
		ents, err := r.ReadDir(rel)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") || len(out) >= maxSkillFiles {
				continue
			}
			p := path.Join(rel, e.Name())
			switch {
			case e.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			case p != FileName:
				out = append(out, p)
			}
		}
		return nil
	}
	err = walk(".")
	sort.Strings(out)
	return out, err
}

// folder returns a reader rooted at the skill folder: for a project skill
// reached beneath the workspace (never through a link out of it), else
// the folder itself.
func (s *Skill) folder() (*workspacefile.Reader, error) {
	if s.Root.Kind != Project || s.Root.Workspace == "" {
		return workspacefile.Open(s.Dir, "")
	}
	ws, err := workspacefile.Open(s.Root.Workspace, s.Root.HermesHome)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	return ws.Sub(s.Dir)
}

// MaxViewBytes caps what ReadFile returns.
const MaxViewBytes = 256 << 10

// ReadFile returns a file of the skill folder. The path is validated by
// CleanFilePath and read with a workspacefile.Reader on the folder (a
// project skill's folder reached beneath the workspace), so neither ".."
// nor a symbolic link can reach outside it, and a FIFO or device is
// refused without a hang. Binary files and files over MaxViewBytes are
// refused.
func (s *Skill) ReadFile(p string) (string, error) {
	clean, err := CleanFilePath(p)
	if err != nil {
		return "", err
	}
	r, err := s.folder()
	if err != nil {
		return "", fmt.Errorf("cannot open skill %q: %s", s.Name, refusal(err))
	}
	defer r.Close()
	b, err := r.ReadFile(clean, MaxViewBytes)
	var re *workspacefile.RefusedError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("skill %q has no file %q", s.Name, clean)
	case errors.As(err, &re) && re.Kind == workspacefile.NotFile:
		return "", fmt.Errorf("%q in skill %q is a folder; view one of its files", clean, s.Name)
	case errors.As(err, &re) && re.Kind == workspacefile.TooLarge:
		return "", fmt.Errorf("%q in skill %q %s (the %d KiB view limit)", clean, s.Name, strings.TrimSuffix(re.Reason, fmt.Sprintf(", over the %d-byte limit", MaxViewBytes)), MaxViewBytes>>10)
	case errors.As(err, &re):
		return "", fmt.Errorf("%q in skill %q %s", clean, s.Name, re.Reason)
	case err != nil:
		return "", fmt.Errorf("cannot open %q in skill %q: %v", clean, s.Name, errors.Unwrap(err))
	}
	if !utf8.Valid(b) || strings.ContainsRune(string(b), 0) {
		return "", fmt.Errorf("%q in skill %q is a binary file (%d bytes); it cannot be shown as text", clean, s.Name, len(b))
	}
	return string(b), nil
}
