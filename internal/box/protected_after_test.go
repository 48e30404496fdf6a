package box

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/protect"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Issue 23 F7: what `hermes box exec`/`box shell` (Box.Command) and
// background processes (Box.Start) leave was never checked. Now
// CheckProtected moves it aside after a Command, and the end of a
// background process triggers the same check, told to the person.
func TestBoxCheckAfterCommandAndBackgroundProcess(t *testing.T) {
	e := startTestBox(t, nil)
	ctx := waitfor.Context(t)
	b, err := e.m.Box(ctx, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	person := &lockedBuffer{}
	b.watch.WarnTo(person)
	plant := `mkdir -p ` + e.workspace + `/%s/.git && printf '[core]\n\tfsmonitor = "echo PWNED"\n' > ` + e.workspace + `/%s/.git/config`
	p, err := b.Command(ctx, Command{Argv: []string{"sh", "-c", strings.ReplaceAll(plant, "%s", "fg")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if note := b.CheckProtected(); !strings.Contains(note, "fg/.git/config"+protect.Refused) {
		t.Errorf("the check after a box command does not name fg/.git/config:\n%s", note)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "fg/.git/config"+protect.Refused)); err != nil {
		t.Errorf("fg/.git/config was not moved aside: %v", err)
	}
	bg, err := b.Start(ctx, backend.ExecRequest{Command: strings.ReplaceAll(plant, "%s", "bg")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bg.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "the person is told bg/.git/config was moved aside", func() bool {
		return strings.Contains(person.String(), "bg/.git/config"+protect.Refused)
	})
	if _, err := os.Stat(filepath.Join(e.workspace, "bg/.git/config"+protect.Refused)); err != nil {
		t.Errorf("bg/.git/config was not moved aside: %v", err)
	}
}

// Attacker trial 2 on issue 23, finding 2: a detached writer in the box
// (`setsid nohup sh -c 'while :; do … >> lib/.git/config; done' &`) puts
// core.fsmonitor back right after each check. When the box stops, its
// processes are gone and the workspace is checked once more, told to the
// person: nothing the writer left stays live.
func TestBoxStopChecksTheWorkspaceAfterDetachedWriters(t *testing.T) {
	e := startTestBox(t, nil)
	ctx := waitfor.Context(t)
	b, err := e.m.Box(ctx, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	person := &lockedBuffer{}
	b.watch.WarnTo(person)
	lib := filepath.Join(e.workspace, "lib")
	if _, err := b.Exec(ctx, backend.ExecRequest{Command: `cd ` + e.workspace + ` && setsid nohup sh -c 'while :; do mkdir -p lib/.git; grep -qs fsmonitor lib/.git/config || printf "[core]\n\tfsmonitor = \"echo PWNED\"\n" >> lib/.git/config; sleep .02; done' </dev/null >/dev/null 2>&1 &`}); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "the detached writer to set core.fsmonitor after the command's check", func() bool {
		data, _ := os.ReadFile(filepath.Join(lib, ".git/config"))
		return strings.Contains(string(data), "fsmonitor")
	})
	if err := e.m.Stop("test-task"); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(lib, ".git/config")); err == nil && strings.Contains(string(data), "fsmonitor") {
		t.Fatalf("lib/.git/config sets core.fsmonitor after the box stopped:\n%s\nperson: %s", data, person.String())
	}
	if !strings.Contains(person.String(), "lib/.git/config"+protect.Refused) {
		t.Errorf("the person was not told lib/.git/config was moved aside: %s", person.String())
	}
}
