package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

type sessionsEnv struct {
	home string
	a, b store.Session
	env  map[string]string // more environment for the app
}

// newSessionsEnv makes a HERMES_HOME with two stored sessions.
func newSessionsEnv(t *testing.T) *sessionsEnv {
	t.Helper()
	home := t.TempDir()
	clock := time.Date(2026, 11, 30, 14, 55, 0, 0, time.UTC)
	tick := func() time.Time { clock = clock.Add(time.Second); return clock }
	st, err := store.Open(filepath.Join(home, store.FileName), store.WithClock(tick))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	a, err := st.CreateSession(ctx, store.NewSession{Model: "anthropic/claude-sonnet-4.6", Provider: "openrouter", Cwd: "/srv"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []llm.Message{
		{Role: llm.RoleUser, Content: "Why is the disk on db-1 full?"},
		{Role: llm.RoleAssistant, Content: "Checking.", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "terminal", Arguments: `{"command":"du -sh /var/log"}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "terminal", Content: "48G /var/log\n```odd```"},
		{Role: llm.RoleAssistant, Content: "Old journald logs fill /var/log."},
	} {
		if _, err := st.AppendMessage(ctx, a.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetTitle(ctx, a.ID, "Disk full"); err != nil {
		t.Fatal(err)
	}
	b, err := st.CreateSession(ctx, store.NewSession{Source: "oneshot"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMessage(ctx, b.ID, llm.Message{Role: llm.RoleUser, Content: "rotate the nginx logs"}); err != nil {
		t.Fatal(err)
	}
	a, _ = st.Session(ctx, a.ID)
	return &sessionsEnv{home: home, a: a, b: b}
}

func (e *sessionsEnv) run(t *testing.T, stdin string, terminal bool, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := &App{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string {
			if k == "HERMES_HOME" {
				return e.home
			}
			return e.env[k]
		},
		Environ: func() []string { return nil }, Now: time.Now, IsTerminal: terminal,
	}
	code := app.Run(context.Background(), args)
	return code, out.String(), errOut.String()
}

func TestSessionsListAndShow(t *testing.T) {
	e := newSessionsEnv(t)
	code, out, stderr := e.run(t, "", false, "sessions", "list")
	if code != 0 {
		t.Fatalf("list: %d %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], e.b.ID) || !strings.Contains(lines[1], "rotate the nginx logs") ||
		!strings.Contains(lines[2], "Disk full") {
		t.Fatalf("list output:\n%s", out)
	}
	_, out, _ = e.run(t, "", false, "sessions", "list", "--source", "oneshot")
	if strings.Contains(out, e.a.ID) || !strings.Contains(out, e.b.ID) {
		t.Fatalf("list --source oneshot:\n%s", out)
	}

	// By unique prefix and by title.
	for _, ref := range []string{e.a.ID[:len(e.a.ID)-3], "disk FULL"} {
		code, out, stderr = e.run(t, "", false, "sessions", "show", ref)
		if code != 0 {
			t.Fatalf("show %s: %s", ref, stderr)
		}
		for _, want := range []string{"# Disk full", e.a.ID, "## User", "Why is the disk on db-1 full?", "**Tool call** `terminal`",
			`"command": "du -sh /var/log"`, "## Tool result: terminal", "````\n48G /var/log\n```odd```\n````"} {
			if !strings.Contains(out, want) {
				t.Fatalf("show %s lacks %q:\n%s", ref, want, out)
			}
		}
	}
}

func TestSessionsResolveErrors(t *testing.T) {
	e := newSessionsEnv(t)
	// Both ids start with the same date.
	code, _, stderr := e.run(t, "", false, "sessions", "show", e.a.ID[:4])
	if code == 0 || !strings.Contains(stderr, "ambiguous") || !strings.Contains(stderr, e.a.ID) || !strings.Contains(stderr, e.b.ID) {
		t.Fatalf("ambiguous prefix: %d %s", code, stderr)
	}
	code, _, stderr = e.run(t, "", false, "sessions", "show", "no-such-thing")
	if code == 0 || !strings.Contains(stderr, `no session matches "no-such-thing"`) || strings.Contains(stderr, "goroutine") {
		t.Fatalf("missing session: %d %s", code, stderr)
	}
}

func TestSessionsExport(t *testing.T) {
	e := newSessionsEnv(t)
	code, out, stderr := e.run(t, "", false, "sessions", "export", "Disk full", "--format", "jsonl")
	if code != 0 {
		t.Fatal(stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	var records []map[string]any
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		records = append(records, rec)
	}
	if len(records) != 5 || records[0]["type"] != "session" || records[0]["id"] != e.a.ID || records[0]["title"] != "Disk full" {
		t.Fatalf("jsonl export:\n%s", out)
	}
	call := records[2]["tool_calls"].([]any)[0].(map[string]any)
	if records[2]["type"] != "message" || records[2]["seq"].(float64) != 2 || call["name"] != "terminal" ||
		records[3]["tool_call_id"] != "c1" || records[4]["content"] != "Old journald logs fill /var/log." {
		t.Fatalf("jsonl messages:\n%s", out)
	}

	file := filepath.Join(t.TempDir(), "out", "disk.md")
	code, out, stderr = e.run(t, "", false, "sessions", "export", e.a.ID, "--format", "md", "-o", file)
	if code != 0 || out != "" {
		t.Fatalf("md export: %d %q %s", code, out, stderr)
	}
	md, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(md), "# Disk full\n") || !strings.Contains(string(md), "Old journald logs fill /var/log.") {
		t.Fatalf("md file:\n%s", md)
	}
	code, _, stderr = e.run(t, "", false, "sessions", "export", e.a.ID, "--format", "html")
	if code == 0 || !strings.Contains(stderr, "jsonl or md") {
		t.Fatalf("bad format: %d %s", code, stderr)
	}
}

func TestSessionsRenameAndDelete(t *testing.T) {
	e := newSessionsEnv(t)
	code, out, stderr := e.run(t, "", false, "sessions", "rename", e.b.ID, "Nginx", "logs")
	if code != 0 || !strings.Contains(out, `"Nginx logs"`) {
		t.Fatalf("rename: %d %s %s", code, out, stderr)
	}
	code, _, stderr = e.run(t, "", false, "sessions", "rename", "Nginx logs", "DISK FULL")
	if code == 0 || !strings.Contains(stderr, "already used by session "+e.a.ID) {
		t.Fatalf("clashing rename: %d %s", code, stderr)
	}

	// Headless without --yes refuses; a terminal "n" keeps it.
	code, _, stderr = e.run(t, "", false, "sessions", "delete", "Nginx logs")
	if code == 0 || !strings.Contains(stderr, "--yes") {
		t.Fatalf("delete without --yes: %d %s", code, stderr)
	}
	code, out, _ = e.run(t, "n\n", true, "sessions", "delete", "Nginx logs")
	if code != 0 || !strings.Contains(out, "Kept.") {
		t.Fatalf("delete answered n: %d %s", code, out)
	}
	code, out, _ = e.run(t, "y\n", true, "sessions", "delete", "Nginx logs")
	if code != 0 || !strings.Contains(out, "Deleted session "+e.b.ID) {
		t.Fatalf("delete answered y: %d %s", code, out)
	}
	code, out, _ = e.run(t, "", false, "sessions", "delete", e.a.ID, "--yes")
	if code != 0 || !strings.Contains(out, "Deleted") {
		t.Fatalf("delete --yes: %d %s", code, out)
	}
	_, out, _ = e.run(t, "", false, "sessions", "list")
	if strings.TrimSpace(out) != "No sessions yet." {
		t.Fatalf("list after deletes:\n%s", out)
	}
}

func TestSessionsSearch(t *testing.T) {
	e := newSessionsEnv(t)
	code, out, stderr := e.run(t, "", false, "sessions", "search", "journald")
	if code != 0 || !strings.Contains(out, e.a.ID+" #4") || !strings.Contains(out, `"Disk full"`) || !strings.Contains(out, "Old [journald] logs") ||
		strings.Contains(out, "**") || strings.Contains(out, "\x1b[") {
		t.Fatalf("search: %d\n%s%s", code, out, stderr)
	}
	// On a terminal the match is bold instead.
	_, out, _ = e.run(t, "", true, "sessions", "search", "journald")
	if !strings.Contains(out, "Old \x1b[1mjournald\x1b[0m logs") || strings.Contains(out, "**") {
		t.Fatalf("search on a terminal:\n%q", out)
	}
	// A substring match shows the words around it.
	_, out, _ = e.run(t, "", false, "sessions", "search", "ournal")
	if !strings.Contains(out, "Old j[ournal]d logs fill /var/log.") {
		t.Fatalf("substring search:\n%s", out)
	}
	_, out, _ = e.run(t, "", false, "sessions", "search", "logs", "--session", e.b.ID[:len(e.b.ID)-1], "--sort", "newest")
	if strings.Contains(out, e.a.ID) || !strings.Contains(out, e.b.ID) {
		t.Fatalf("search --session:\n%s", out)
	}
	_, out, _ = e.run(t, "", false, "sessions", "search", "kubernetes")
	if strings.TrimSpace(out) != "No matches." {
		t.Fatalf("no matches: %q", out)
	}
	code, _, stderr = e.run(t, "", false, "sessions", "search", `"unbalanced`)
	if code == 0 || !strings.Contains(stderr, "not valid FTS5 syntax") || strings.Contains(stderr, "goroutine") {
		t.Fatalf("malformed query: %d %s", code, stderr)
	}
}
