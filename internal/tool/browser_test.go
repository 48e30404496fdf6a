package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/browser"
	"github.com/hermes-go/hermes/internal/llm"

	"github.com/hermes-go/hermes/internal/waitfor"
)

func newTestBrowser(t *testing.T, opts browser.Options, vision bool) (map[string]Tool, *browser.Manager) {
	t.Helper()
	if browser.FindChromium() == "" {
		t.Skip("no Chromium on PATH (Debian: apt-get install chromium); .ci/run installs it")
	}
	if opts.CommandTimeout == 0 {
		// A page that takes 30 s (DefaultCommandTimeout) on a loaded
		// 2-core machine is not hung; tests of the hang set their own.
		opts.CommandTimeout = min(time.Until(waitfor.Deadline(t))/4, 3*time.Minute)
	}
	m := browser.NewManager(opts)
	t.Cleanup(func() { m.Close() })
	out := map[string]Tool{}
	for _, tl := range NewBrowserTools(BrowserOptions{Manager: m, Vision: vision}) {
		out[tl.Spec().Name] = tl
	}
	return out, m
}

func runTool(t *testing.T, tl Tool, session, args string) Result {
	t.Helper()
	return tl.Run(context.Background(), Call{SessionID: session, Args: json.RawMessage(args)})
}

// chromiumPIDs lists the Chromium processes whose command line holds marker.
func chromiumPIDs(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmd), marker) && strings.Contains(string(cmd), "--remote-debugging-pipe") &&
			!strings.Contains(string(cmd), "--type=") {
			out = append(out, pid)
		}
	}
	return out
}

// A page that hangs the renderer is a tool error within the command
// timeout, and a killed browser is a tool error; either way the next call
// gets a fresh browser that works.
func TestBrowserHangAndCrashGiveAFreshBrowser(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			fmt.Fprint(w, `<title>Hang</title><script>while (true) {}</script>`)
			return
		}
		fmt.Fprint(w, `<title>Fine</title><p>fine</p>`)
	}))
	defer srv.Close()
	profiles := t.TempDir()
	tools, _ := newTestBrowser(t, browser.Options{CommandTimeout: 5 * time.Second, TempDir: profiles}, false)
	nav := tools["browser_navigate"]
	if r := runTool(t, nav, "s1", `{"url":"`+srv.URL+`/"}`); r.IsError {
		t.Fatalf("first page: %+v", r)
	}
	if r := runTool(t, nav, "s1", `{"url":"`+srv.URL+`/hang"}`); !r.IsError || !strings.Contains(r.Content, "fresh one") {
		t.Fatalf("hanging page: %+v", r)
	}
	if r := runTool(t, nav, "s1", `{"url":"`+srv.URL+`/"}`); r.IsError || !strings.Contains(r.Content, `"title": "Fine"`) {
		t.Fatalf("after the hang: %+v", r)
	}
	pids := chromiumPIDs(profiles + "/hermes-browser-")
	if len(pids) == 0 {
		t.Fatal("no Chromium process found to kill")
	}
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	deadline := waitfor.Deadline(t)
	var r Result
	for time.Now().Before(deadline) {
		if r = runTool(t, tools["browser_snapshot"], "s1", `{}`); r.IsError {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !r.IsError || !strings.Contains(r.Content, "fresh one") {
		t.Fatalf("killed browser: %+v", r)
	}
	if r := runTool(t, nav, "s1", `{"url":"`+srv.URL+`/"}`); r.IsError {
		t.Fatalf("after the crash: %+v", r)
	}
}

// With a model that accepts images browser_vision answers with a PNG
// screenshot part; unknown refs and keys are errors the model can act on;
// downloads land in the workspace.
func TestBrowserVisionRefsAndDownloads(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/report.csv" {
			w.Header().Set("Content-Disposition", `attachment; filename="report.csv"`)
			w.Header().Set("Content-Type", "text/csv")
			fmt.Fprint(w, "a,b\n1,2\n")
			return
		}
		fmt.Fprint(w, `<title>Red</title><body style="background:#c00"><a href="/report.csv">Download report</a></body>`)
	}))
	defer srv.Close()
	ws := t.TempDir()
	tools, _ := newTestBrowser(t, browser.Options{Workdir: func(string) string { return ws }}, true)
	if r := runTool(t, tools["browser_navigate"], "s", `{"url":"`+srv.URL+`/"}`); r.IsError {
		t.Fatal(r.Content)
	}
	r := runTool(t, tools["browser_vision"], "s", `{"question":"what colour is the page?"}`)
	if r.IsError || len(r.Parts) != 1 || r.Parts[0].Type != llm.PartImage || r.Parts[0].MediaType != "image/png" ||
		!strings.HasPrefix(string(r.Parts[0].Data), "\x89PNG") {
		t.Fatalf("vision result = %q with %d parts", r.Content, len(r.Parts))
	}
	if r := runTool(t, tools["browser_click"], "s", `{"ref":"@e99"}`); !r.IsError || !strings.Contains(r.Content, "browser_snapshot") {
		t.Errorf("unknown ref: %+v", r)
	}
	if r := runTool(t, tools["browser_press"], "s", `{"key":"Hyper"}`); !r.IsError || !strings.Contains(r.Content, "Enter") {
		t.Errorf("unknown key: %+v", r)
	}
	snap := runTool(t, tools["browser_snapshot"], "s", `{}`)
	i := strings.Index(snap.Content, `link "Download report" [`)
	if i < 0 {
		t.Fatalf("snapshot = %s", snap.Content)
	}
	ref := strings.TrimSuffix(strings.SplitN(snap.Content[i+len(`link "Download report" [`):], "\n", 2)[0], "]")
	if r := runTool(t, tools["browser_click"], "s", `{"ref":"`+ref+`"}`); r.IsError {
		t.Fatal(r.Content)
	}
	deadline := waitfor.Deadline(t)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(ws, browser.DownloadDir, "report.csv")); err == nil && string(b) == "a,b\n1,2\n" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Error("the download did not land in the workspace")
}

// A browser left unused for the inactivity timeout is closed (its memory
// freed); the next call starts a fresh one.
func TestBrowserClosedWhenIdle(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `<title>Fine</title>`) }))
	defer srv.Close()
	profiles := t.TempDir()
	tools, _ := newTestBrowser(t, browser.Options{IdleTimeout: 300 * time.Millisecond, TempDir: profiles}, false)
	if r := runTool(t, tools["browser_navigate"], "s", `{"url":"`+srv.URL+`/"}`); r.IsError {
		t.Fatal(r.Content)
	}
	deadline := waitfor.Deadline(t)
	for len(chromiumPIDs(profiles+"/hermes-browser-")) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle browser is still running")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := runTool(t, tools["browser_navigate"], "s", `{"url":"`+srv.URL+`/"}`); r.IsError {
		t.Fatalf("after the idle close: %s", r.Content)
	}
}

// A page that opens alert() and confirm() does not stall: the alert is
// accepted, the confirm dismissed, and both show in browser_console.
func TestBrowserAnswersDialogs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<title>Before</title><script>alert("hello there"); document.title = confirm("delete all?") ? "Deleted" : "Kept";</script>`)
	}))
	defer srv.Close()
	tools, _ := newTestBrowser(t, browser.Options{}, false)
	r := runTool(t, tools["browser_navigate"], "s", `{"url":"`+srv.URL+`/"}`)
	if r.IsError || !strings.Contains(r.Content, `"title": "Kept"`) {
		t.Fatalf("navigate = %+v", r)
	}
	c := runTool(t, tools["browser_console"], "s", `{}`)
	if !strings.Contains(c.Content, `alert \"hello there\" accepted`) || !strings.Contains(c.Content, `confirm \"delete all?\" dismissed`) {
		t.Errorf("console = %s", c.Content)
	}
}
