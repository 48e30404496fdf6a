// Package bundled ships the skills written for hermes (working in a box,
// secrets and egress, triaging logs, writing a skill) inside the binary and
// seeds them into HERMES_HOME/skills, as Hermes Agent seeds its bundled
// catalog on install and update.
//
// HERMES_HOME/skills/.bundled_manifest records, one "name:sha256" line per
// skill, the hash of the bundled copy last installed. Sync installs a
// skill that is missing, replaces a copy still equal to what was installed
// when the bundle changes, and never touches a copy the person edited or a
// skill they deleted. A .no-bundled-skills file in HERMES_HOME/skills opts
// out (Hermes's marker).
package bundled

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hermes-go/hermes/internal/atomicfile"
)

//go:embed catalog
var catalog embed.FS

// Manifest and OptOut are file names in HERMES_HOME/skills.
const (
	Manifest = ".bundled_manifest"
	OptOut   = ".no-bundled-skills"
)

// Skill is one bundled skill.
type Skill struct {
	Name     string            // folder name, e.g. working-in-a-box
	Category string            // e.g. hermes
	Files    map[string][]byte // path inside the skill folder → content
	Hash     string            // sha256 of Files (see hashFiles)
}

// Skills returns the bundled skills, sorted by name.
func Skills() []Skill {
	var out []Skill
	cats, _ := fs.ReadDir(catalog, "catalog")
	for _, c := range cats {
		names, _ := fs.ReadDir(catalog, path.Join("catalog", c.Name()))
		for _, n := range names {
			dir := path.Join("catalog", c.Name(), n.Name())
			files := map[string][]byte{}
			_ = fs.WalkDir(catalog, dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files[strings.TrimPrefix(p, dir+"/")], _ = fs.ReadFile(catalog, p)
				}
				return err
			})
			out = append(out, Skill{Name: n.Name(), Category: c.Name(), Files: files, Hash: hashFiles(files)})
		}
	}
	slices.SortFunc(out, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// hashFiles hashes a skill's files: for each path in order, the path, a
// NUL, the length and the content.
func hashFiles(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(files[n]))
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Report says what Sync did, by skill name.
type Report struct {
	Installed, Updated, Kept []string
	// OptedOut is true when the .no-bundled-skills marker stopped the sync.
	OptedOut bool
}

// Changed reports whether Sync wrote anything.
func (r Report) Changed() bool { return len(r.Installed)+len(r.Updated) > 0 }

// Sync seeds the bundled skills into home/skills (home is HERMES_HOME).
// When the manifest already records every bundled hash it reads nothing
// else, so it is cheap on every start. Writes stay beneath home/skills
// (os.Root: no link leads out).
func Sync(home string) (Report, error) {
	dir := filepath.Join(home, "skills")
	var rep Report
	if _, err := os.Lstat(filepath.Join(dir, OptOut)); err == nil {
		rep.OptedOut = true
		return rep, nil
	}
	manifest, err := readManifest(filepath.Join(dir, Manifest))
	if err != nil {
		return rep, err
	}
	bundle := Skills()
	if allRecorded(bundle, manifest) {
		return rep, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rep, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return rep, err
	}
	defer root.Close()
	for _, s := range bundle {
		if err := syncOne(root, s, manifest, &rep); err != nil {
			return rep, fmt.Errorf("bundled skill %s: %w", s.Name, err)
		}
	}
	return rep, writeManifest(filepath.Join(dir, Manifest), manifest)
}

func allRecorded(bundle []Skill, manifest map[string]string) bool {
	for _, s := range bundle {
		if manifest[s.Name] != s.Hash {
			return false
		}
	}
	return true
}

// syncOne installs, updates or keeps one skill and updates manifest.
func syncOne(root *os.Root, s Skill, manifest map[string]string, rep *Report) error {
	rel := path.Join(s.Category, s.Name)
	installedHash := manifest[s.Name]
	if installedHash == s.Hash {
		return nil
	}
	if _, err := root.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		if installedHash != "" {
			manifest[s.Name] = s.Hash // deleted by the person: stays deleted
			return nil
		}
		rep.Installed = append(rep.Installed, s.Name)
		manifest[s.Name] = s.Hash
		return writeSkill(root, rel, s)
	} else if err != nil {
		return err
	}
	current, err := readInstalled(root, rel, s)
	if err != nil {
		return err
	}
	switch {
	case current == s.Hash:
		manifest[s.Name] = s.Hash
	case installedHash != "" && current == installedHash:
		rep.Updated = append(rep.Updated, s.Name)
		manifest[s.Name] = s.Hash
		return writeSkill(root, rel, s)
	default:
		// Edited by the person, or their own skill of that name: kept.
		rep.Kept = append(rep.Kept, s.Name)
	}
	return nil
}

// readInstalled hashes the installed copies of the bundled files (a
// missing file counts as empty, so it differs).
func readInstalled(root *os.Root, rel string, s Skill) (string, error) {
	files := map[string][]byte{}
	for name := range s.Files {
		b, err := root.ReadFile(path.Join(rel, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		files[name] = b
	}
	return hashFiles(files), nil
}

func writeSkill(root *os.Root, rel string, s Skill) error {
	for name, b := range s.Files {
		p := path.Join(rel, name)
		if err := root.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
		if err := root.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// maxManifest bounds the manifest read.
const maxManifest = 1 << 20

func readManifest(p string) (map[string]string, error) {
	m := map[string]string{}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) > maxManifest {
		b = b[:maxManifest]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if name, hash, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok && name != "" {
			m[name] = hash
		}
	}
	return m, nil
}

func writeManifest(p string, m map[string]string) error {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + ":" + m[n] + "\n")
	}
	return atomicfile.Write(p, []byte(b.String()), 0o644)
}
