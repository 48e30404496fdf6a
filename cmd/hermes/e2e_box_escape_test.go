package main_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/box/escapetest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/tool"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// TestBoxEscapeAttacksThroughBinary runs the red team's box-boundary
// attacks through `hermes box exec` and `hermes box restore`, as an
// attacker in a box (or one who edited a snapshot) would: a setuid root
// shell planted in the workspace, system calls the filter denies made
// through the i386 and x32 entry points, a vsock socket, and a snapshot
// whose layer carries an overlay redirect to a directory the box hides.
func TestBoxEscapeAttacksThroughBinary(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	e := newE2E(t)
	const task = "escape-e2e"
	t.Cleanup(func() { e.run("box", "rm", task) })

	abi := escapetest.Supported() && escapetest.I386Works(t.TempDir()) == nil
	attacks := []struct {
		name string
		call escapetest.Call
		want int
	}{
		{"i386-unshare", escapetest.Call{ABI: escapetest.I386, Nr: 310, Args: [4]uint32{unix.CLONE_NEWUSER}}, escapetest.ExitEPERM},
		{"i386-keyctl", escapetest.Call{ABI: escapetest.I386, Nr: 288, Args: [4]uint32{0, 0xfffffffd}}, escapetest.ExitEPERM},
		{"x32-unshare", escapetest.Call{ABI: escapetest.X32, Nr: 272}, escapetest.ExitENOSYS},
		{"vsock", escapetest.Call{Nr: unix.SYS_SOCKET, Args: [4]uint32{unix.AF_VSOCK, unix.SOCK_STREAM}}, escapetest.ExitEAFNOSUPPORT},
	}
	script := "cp /bin/sh rootsh; chmod 4755 rootsh; chmod 6755 rootsh; install -m 4755 /bin/sh rootsh2; "
	if abi {
		for _, a := range attacks {
			if err := os.WriteFile(filepath.Join(e.workspace, a.name), escapetest.ELF(a.call), 0o755); err != nil {
				t.Fatal(err)
			}
			script += fmt.Sprintf("./%s; echo %s=$?; ", a.name, a.name)
		}
	}
	res := e.run("box", "exec", "--new", task, "--", "sh", "-c", script+"true")
	if res.code != 0 {
		t.Fatalf("box exec failed:\n%s", res)
	}
	for _, name := range []string{"rootsh", "rootsh2"} {
		fi, err := os.Stat(filepath.Join(e.workspace, name))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, res)
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("the box planted a setuid/setgid file owned by uid 0 in the host workspace: %s %v", name, fi.Mode())
		}
	}
	if abi {
		for _, a := range attacks {
			if want := fmt.Sprintf("%s=%d\n", a.name, a.want); !strings.Contains(res.stdout, want) {
				t.Errorf("%s: want %q (refused) in the box's output:\n%s", a.name, want, res)
			}
		}
	} else {
		t.Log("no i386 emulation here: the raw-syscall attacks were skipped")
	}

	snap := e.run("box", "snapshot", task)
	if snap.code != 0 {
		t.Fatalf("box snapshot:\n%s", snap)
	}
	id := strings.Fields(snap.stdout)[0]
	tamperSnapshot(t, filepath.Join(e.home, "boxes", "snapshots"), id)
	restore := e.run("box", "restore", id, "--task", task+"-restored")
	t.Cleanup(func() { e.run("box", "rm", task+"-restored") })
	if restore.code == 0 || !strings.Contains(restore.stderr, "trusted.overlay.redirect") {
		t.Fatalf("a snapshot whose layer redirects into a hidden directory was restored:\n%s", restore)
	}
}

// tamperSnapshot replaces snapshot id's archive with one whose directory
// "exposed" redirects to /root and updates the manifest's hash, as a
// person or program with write access to the snapshot store could.
func tamperSnapshot(t *testing.T, dir, id string) {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(enc)
	for _, hdr := range []*tar.Header{
		{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "exposed/", Typeflag: tar.TypeDir, Mode: 0o755,
			PAXRecords: map[string]string{"SCHILY.xattr.trusted.overlay.redirect": "/root"}},
	} {
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	enc.Close()
	if err := os.WriteFile(filepath.Join(dir, id+".tar.zst"), buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	manPath := filepath.Join(dir, id+".json")
	data, err := os.ReadFile(manPath)
	if err != nil {
		t.Fatal(err)
	}
	var man map[string]any
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	man["sha256"] = hex.EncodeToString(sum[:])
	man["size"] = buf.Len()
	data, _ = json.Marshal(man)
	if err := os.WriteFile(manPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBoxSpillFileReadableInBox: with terminal.backend: box, the full
// output of a long command is saved where the model's tools run (inside
// the box), not under HERMES_HOME, which the box cannot see.
func TestBoxSpillFileReadableInBox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "long", Name: "terminal", Args: args(map[string]any{"command": "seq 1 40000"})}}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "look", Name: "terminal", Args: args(map[string]any{"command": "tail -n 1 " + tool.BoxSpillDir + "/terminal-*.log"})}}},
		llmtest.Turn{Text: "done"},
	)
	e.configureModel()
	e.mustRun("config", "set", "terminal.backend", "box")
	t.Cleanup(func() { e.run("box", "rm", e.latestSessionID()) })
	e.mustRun("chat", "-Q", "-q", "count")

	var first struct {
		Truncated      bool   `json:"truncated"`
		FullOutputPath string `json:"full_output_path"`
	}
	if err := json.Unmarshal([]byte(toolResults(t, e.request(1))["long"]), &first); err != nil {
		t.Fatal(err)
	}
	if !first.Truncated || !strings.HasPrefix(first.FullOutputPath, tool.BoxSpillDir+"/") {
		t.Fatalf("the long output's result names %q, want a file under %s in the box", first.FullOutputPath, tool.BoxSpillDir)
	}
	if look := toolResults(t, e.request(2))["look"]; !strings.Contains(look, "40000") {
		t.Fatalf("the spill file is not readable in the box:\n%s", look)
	}
	if left, _ := filepath.Glob(filepath.Join(e.home, "cache", "terminal", "terminal-*.log")); len(left) != 0 {
		t.Errorf("spill files left under HERMES_HOME, where the box cannot read them: %v", left)
	}
}

// TestBoxSpillFileSurvivesResume: the spill file a box session's history
// names is still there after -c (the box restarted; its /tmp is a new
// tmpfs): read_file on it returns the saved output.
func TestBoxSpillFileSurvivesResume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "long", Name: "terminal", Args: args(map[string]any{"command": "seq 1 40000"})}}},
		llmtest.Turn{Text: "counted"},
	)
	e.configureModel()
	e.mustRun("config", "set", "terminal.backend", "box")
	t.Cleanup(func() { e.run("box", "rm", e.latestSessionID()) })
	e.mustRun("chat", "-Q", "-q", "count")
	var first struct {
		FullOutputPath string `json:"full_output_path"`
	}
	if err := json.Unmarshal([]byte(toolResults(t, e.request(1))["long"]), &first); err != nil || first.FullOutputPath == "" {
		t.Fatalf("no spill file named (%v): %s", err, toolResults(t, e.request(1))["long"])
	}
	var n atomic.Int32
	e.srv.SetResponder(func(llmtest.Request) llmtest.Turn {
		if n.Add(1) == 1 {
			return llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "reread", Name: "read_file",
				Args: args(map[string]any{"path": first.FullOutputPath, "offset": 39999, "limit": 5})}}}
		}
		return llmtest.Turn{Text: "read it"}
	})
	res := e.mustRun("chat", "-Q", "-c", "-q", "read the saved output's end")
	if res.stdout != "read it\n" {
		t.Fatalf("stdout = %q", res.stdout)
	}
	got := toolResults(t, e.request(3))["reread"]
	if !strings.Contains(got, "40000") || strings.Contains(strings.ToLower(got), "not found") {
		t.Fatalf("read_file on %s after -c:\n%s", first.FullOutputPath, got)
	}
}
