package tool

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Spill files hold the full output of a command whose output was cut for
// the model. They are capped (MaxSpillBytes) and pruned (KeepSpillFiles).
// With a backend other than local the model's file tools cannot see the
// host, so the file is moved into the environment (BoxSpillDir in the
// box, SandboxSpillDir elsewhere) and the result names that path.
const (
	// MaxSpillBytes is the most output one spill file keeps (16 MiB); the
	// rest is counted and dropped.
	MaxSpillBytes = 16 << 20
	// KeepSpillFiles is how many spill files OutputDir (and the directory
	// inside the box) keeps, newest first.
	KeepSpillFiles = 20
	// BoxSpillDir is where spill files go inside the box
	// (terminal.backend: box): on its persistent layer, so that a resumed
	// session (-c) can still read the files its history names. The box's
	// /tmp and /var/tmp are tmpfs, empty after every start.
	BoxSpillDir = "/var/lib/hermes/output"
	// SandboxSpillDir is where spill files go inside other non-local
	// environments (containers, hosted sandboxes, ssh hosts), whose /tmp
	// lives as long as the environment and is writable by any user.
	SandboxSpillDir = "/tmp/hermes-output"
)

// spillWriter writes at most MaxSpillBytes to f and counts the rest.
type spillWriter struct {
	f       *os.File
	n       int64
	dropped int64
}

func (w *spillWriter) Write(p []byte) (int, error) {
	room := MaxSpillBytes - w.n
	if room <= 0 {
		w.dropped += int64(len(p))
		return len(p), nil
	}
	q := p
	if int64(len(q)) > room {
		q = q[:room]
		w.dropped += int64(len(p) - len(q))
	}
	n, err := w.f.Write(q)
	w.n += int64(n)
	if err != nil {
		return n, err
	}
	return len(p), nil
}

// close notes what was dropped at the end of the file and closes it.
func (w *spillWriter) close() {
	if w.dropped > 0 {
		fmt.Fprintf(w.f, "\n[hermes: output saved up to %d MiB; %d more bytes were not saved]\n", MaxSpillBytes>>20, w.dropped)
	}
	w.f.Close()
}

// newSpill creates a spill file in dir after pruning old ones; nil when
// dir is "" or cannot be written.
func newSpill(dir string) *spillWriter {
	if dir == "" || os.MkdirAll(dir, 0o700) != nil {
		return nil
	}
	pruneSpills(dir, KeepSpillFiles-1)
	f, err := os.CreateTemp(dir, "terminal-*.log")
	if err != nil {
		return nil
	}
	return &spillWriter{f: f}
}

// pruneSpills removes all but the keep newest spill files of dir.
func pruneSpills(dir string, keep int) {
	paths, _ := filepath.Glob(filepath.Join(dir, "terminal-*.log"))
	if len(paths) <= keep {
		return
	}
	type spill struct {
		path string
		info fs.FileInfo
	}
	var all []spill
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil {
			all = append(all, spill{p, fi})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].info.ModTime().After(all[j].info.ModTime()) })
	for i := keep; i < len(all); i++ {
		os.Remove(all[i].path)
	}
}

// spillPath returns where the model can read the spill file hostPath:
// the host path for the local backend, else NAME under BoxSpillDir
// (box) or SandboxSpillDir inside env.
func spillPath(kind, hostPath string) string {
	switch kind {
	case "local":
		return hostPath
	case "box":
		return BoxSpillDir + "/" + filepath.Base(hostPath)
	}
	return SandboxSpillDir + "/" + filepath.Base(hostPath)
}

// moveSpill copies hostPath into env at path (unless path is hostPath),
// removes the host copy and prunes the spill files in env's directory to
// KeepSpillFiles.
func moveSpill(ctx context.Context, env backend.Environment, hostPath, path string) error {
	if path == hostPath {
		return nil
	}
	defer os.Remove(hostPath)
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return err
	}
	if err := env.WriteFile(ctx, path, data, 0o600); err != nil {
		return err
	}
	pruneEnvSpills(ctx, env, filepath.Dir(path))
	return nil
}

// pruneEnvSpills removes all but the KeepSpillFiles newest spill files
// (terminal-*.log) of dir inside env; failures are ignored (the files
// are only a convenience).
func pruneEnvSpills(ctx context.Context, env backend.Environment, dir string) {
	entries, err := env.ReadDir(ctx, dir)
	if err != nil {
		return
	}
	var spills []backend.FileInfo
	for _, e := range entries {
		if ok, _ := filepath.Match("terminal-*.log", e.Name); ok && !e.IsDir {
			spills = append(spills, e)
		}
	}
	if len(spills) <= KeepSpillFiles {
		return
	}
	sort.Slice(spills, func(i, j int) bool { return spills[i].ModTime.After(spills[j].ModTime) })
	cmd := "rm -f --"
	for _, e := range spills[KeepSpillFiles:] {
		cmd += " '" + dir + "/" + e.Name + "'" // names are terminal-<digits>.log: no quote inside
	}
	_, _ = env.Exec(ctx, backend.ExecRequest{Command: cmd, Timeout: 30 * time.Second})
}
