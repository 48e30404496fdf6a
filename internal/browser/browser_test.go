package browser

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// These tests drive the real Chromium (Debian: /usr/bin/chromium, which
// .ci/run installs) through the package's own API: Manager, Browser and
// their errors. internal/tool's browser tests drive the same code through
// the browser_* tools (hangs, crashes, idle close, dialogs, downloads).

// newTestManager returns a Manager for a host Chromium, closed with the
// test, or skips when there is no Chromium.
func newTestManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	if FindChromium() == "" {
		t.Skip("no Chromium on PATH (Debian: apt-get install chromium); .ci/run installs it")
	}
	if opts.TempDir == "" {
		opts.TempDir = t.TempDir()
	}
	m := NewManager(opts)
	t.Cleanup(func() { m.Close() })
	return m
}

// slow is the bound of an action that should succeed: a loaded 2-core
// machine is not a hung page.
func slow(t *testing.T) time.Duration {
	return min(time.Until(waitfor.Deadline(t))/4, 3*time.Minute)
}

func get(t *testing.T, m *Manager, session string) *Browser {
	t.Helper()
	b, err := m.Get(waitfor.Context(t), session)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pages serves a fixed HTML body per path.
func pages(t *testing.T, byPath map[string]string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := byPath[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// refOf returns the @eN ref a snapshot gives the line starting with prefix
// (`button "Go"`), or fails.
func refOf(t *testing.T, snap, prefix string) string {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(prefix) + `[^\n]*\[(@e\d+)\]`).FindStringSubmatch(snap)
	if m == nil {
		t.Fatalf("no %s with a ref in the snapshot:\n%s", prefix, snap)
	}
	return m[1]
}

// A snapshot names the interactive elements with @e refs that stay the
// same across snapshots of one page, drive Click and Type, and are
// forgotten when the tab navigates.
func TestSnapshotRefsDriveThePageUntilNavigation(t *testing.T) {
	srv := pages(t, map[string]string{
		"/": `<title>Form</title><h1>Sign up</h1><p>Fill in the form.</p>
			<label>Name <input id="name" type="text"></label>
			<button onclick="document.title = 'Hello ' + document.getElementById('name').value">Greet</button>
			<a href="/next">Next page</a>`,
		"/next": `<title>Next</title><p>second page</p>`,
	})
	m := newTestManager(t, Options{})
	b := get(t, m, "s")
	p, err := b.Navigate(srv.URL+"/", slow(t))
	if err != nil || p.Title != "Form" || p.URL != srv.URL+"/" {
		t.Fatalf("Navigate = %+v, %v", p, err)
	}
	_, snap, err := b.Snapshot(false, DefaultSnapshotChars, slow(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`heading "Sign up"`, `text "Fill in the form."`, `button "Greet"`, `link "Next page"`, `textbox "Name"`} {
		if !strings.Contains(snap, want) {
			t.Errorf("compact snapshot lacks %s:\n%s", want, snap)
		}
	}
	if strings.Contains(snap, `text "Greet"`) {
		t.Errorf("the text of a named button is repeated:\n%s", snap)
	}
	button, box := refOf(t, snap, `button "Greet"`), refOf(t, snap, `textbox "Name"`)
	if strings.Contains(snap, `heading "Sign up" [`) {
		t.Errorf("a heading got a ref in the compact snapshot:\n%s", snap)
	}

	_, again, err := b.Snapshot(true, DefaultSnapshotChars, slow(t))
	if err != nil {
		t.Fatal(err)
	}
	if refOf(t, again, `button "Greet"`) != button || refOf(t, again, `textbox "Name"`) != box {
		t.Errorf("refs changed between snapshots of one page:\n%s\n---\n%s", snap, again)
	}
	if len(again) <= len(snap) {
		t.Errorf("the full snapshot (%d chars) is not larger than the compact one (%d)", len(again), len(snap))
	}

	if err := b.Type(strings.TrimPrefix(box, "@"), "Ada", slow(t)); err != nil { // refs work without "@"
		t.Fatal(err)
	}
	if err := b.Type(box, "Grace", slow(t)); err != nil { // the field is cleared first
		t.Fatal(err)
	}
	if p, err := b.Click(button, slow(t)); err != nil || p.Title != "Hello Grace" {
		t.Fatalf("Click = %+v, %v", p, err)
	}

	if _, err := b.Navigate(srv.URL+"/next", slow(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Click(button, slow(t)); err == nil || !strings.Contains(err.Error(), "browser_snapshot") {
		t.Errorf("a ref of the old page after navigation: %v", err)
	}
	if p, err := b.Back(slow(t)); err != nil || p.Title != "Hello Grace" && p.Title != "Form" {
		t.Errorf("Back = %+v, %v", p, err)
	}
	if _, err := b.Click(button, slow(t)); err == nil || !strings.Contains(err.Error(), "browser_snapshot") {
		t.Errorf("a ref after Back: %v", err)
	}
}

// A snapshot beyond maxChars keeps its head and tail and says how much of
// the middle was left out.
func TestSnapshotIsCapped(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("<title>Long</title>")
	for i := range 400 {
		fmt.Fprintf(&sb, "<p>paragraph number %d</p>", i)
	}
	srv := pages(t, map[string]string{"/": sb.String()})
	b := get(t, newTestManager(t, Options{}), "s")
	if _, err := b.Navigate(srv.URL+"/", slow(t)); err != nil {
		t.Fatal(err)
	}
	_, snap, err := b.Snapshot(false, 3000, slow(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap) > 3200 || !strings.Contains(snap, "characters omitted") ||
		!strings.Contains(snap, "paragraph number 0") || !strings.Contains(snap, "paragraph number 399") {
		t.Errorf("capped snapshot (%d bytes):\n%s", len(snap), snap)
	}
}

// Console messages and uncaught errors are buffered from the first page
// on, returned once, capped at consoleCap entries (the oldest dropped and
// counted) and at consoleTextMax characters each.
func TestConsoleCapturesMessagesAndErrors(t *testing.T) {
	srv := pages(t, map[string]string{
		"/": `<title>Logs</title><script>
			console.log("hello", 42); console.warn("careful");
			console.error("bad thing");
			setTimeout(() => { throw new Error("boom") }, 0);</script>`,
		"/flood": `<title>Flood</title><script>
			for (let i = 0; i < 250; i++) console.log("line " + i);
			console.log("x".repeat(5000));</script>`,
	})
	b := get(t, newTestManager(t, Options{}), "s")
	if _, err := b.Navigate(srv.URL+"/", slow(t)); err != nil {
		t.Fatal(err)
	}
	var got []ConsoleEntry
	waitfor.Until(t, "the page's five console entries", func() bool {
		e, _ := b.Console()
		got = append(got, e...)
		return len(got) >= 5
	})
	want := map[string]string{"log": "hello 42", "warning": "careful", "error": "bad thing"}
	for _, e := range got {
		if w, ok := want[e.Type]; ok && e.Text == w {
			delete(want, e.Type)
			if e.URL != srv.URL+"/" || e.Line != 2 && e.Line != 3 {
				t.Errorf("entry %+v: want the page's URL and line", e)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("missing console entries %v in %+v", want, got)
	}
	if !strings.Contains(fmt.Sprint(got), "boom") {
		t.Errorf("the uncaught error is missing: %+v", got)
	}
	if e, dropped := b.Console(); len(e) != 0 || dropped != 0 {
		t.Errorf("Console did not clear: %+v, %d dropped", e, dropped)
	}

	if _, err := b.Navigate(srv.URL+"/flood", slow(t)); err != nil {
		t.Fatal(err)
	}
	var last ConsoleEntry
	var kept, dropped int
	waitfor.Until(t, "the flood's last message", func() bool {
		b.cmu.Lock()
		defer b.cmu.Unlock()
		n := len(b.console)
		return n > 0 && strings.HasPrefix(b.console[n-1].Text, "xxx")
	})
	e, dropped := b.Console()
	kept, last = len(e), e[len(e)-1]
	if kept != consoleCap || dropped != 251-consoleCap || e[0].Text != fmt.Sprintf("line %d", 251-consoleCap) {
		t.Errorf("kept %d (first %q), dropped %d; want %d kept and %d dropped", kept, e[0].Text, dropped, consoleCap, 251-consoleCap)
	}
	if n := len([]rune(last.Text)); n != consoleTextMax+1 || !strings.HasSuffix(last.Text, "…") {
		t.Errorf("a 5000-character message kept %d characters", n)
	}
}

// A page that never answers is ErrHung within the action's timeout, the
// browser reports itself Broken, and after Drop the next Get starts a
// fresh browser that works.
func TestHungPageTimesOutAndIsReplaced(t *testing.T) {
	srv := pages(t, map[string]string{
		"/":     `<title>Fine</title>`,
		"/spin": `<title>Spin</title><script>while (true) {}</script>`,
	})
	m := newTestManager(t, Options{})
	b := get(t, m, "s")
	if b.Broken(nil) {
		t.Fatal("a working browser reports itself broken")
	}
	// The page never fires its load event, however long the bound.
	_, err := b.Navigate(srv.URL+"/spin", 2*time.Second)
	if !errors.Is(err, ErrHung) || !strings.Contains(err.Error(), "did not answer in 2s") || !b.Broken(err) {
		t.Fatalf("Navigate to a spinning page: %v (broken %v)", err, b.Broken(err))
	}
	m.Drop("s", b)
	if !b.Broken(nil) {
		t.Error("a dropped browser does not report itself broken")
	}
	fresh := get(t, m, "s")
	if fresh == b {
		t.Fatal("Get returned the dropped browser")
	}
	if p, err := fresh.Navigate(srv.URL+"/", slow(t)); err != nil || p.Title != "Fine" {
		t.Fatalf("the fresh browser: %+v, %v", p, err)
	}
}

// A page that cannot load is an error naming Chromium's reason, with the
// Explain callback's account (the egress gate's refusal in a box) added;
// Back with no history says so, and the tab still works after a failed load.
func TestNavigationErrorsAreExplained(t *testing.T) {
	dead := "http://" + testnet.FreeAddr(t) + "/" // connection refused
	var err error
	var asked []string
	m := newTestManager(t, Options{Explain: func(_ context.Context, session, url string) string {
		asked = append(asked, session+" "+url)
		return "hermes egress denied it"
	}})
	b := get(t, m, "s1")
	if _, err := b.Back(slow(t)); err == nil || !strings.Contains(err.Error(), "no previous page") {
		t.Errorf("Back with no history: %v", err)
	}
	_, err = b.Navigate(dead, slow(t))
	if err == nil || !strings.Contains(err.Error(), "ERR_CONNECTION_REFUSED") || !strings.Contains(err.Error(), "hermes egress denied it") {
		t.Errorf("Navigate to a closed port: %v", err)
	}
	if len(asked) != 1 || asked[0] != "s1 "+dead {
		t.Errorf("Explain was asked %q", asked)
	}
	if errors.Is(err, ErrHung) || b.Broken(err) {
		t.Errorf("a page that did not load broke the browser: %v", err)
	}
	srv := pages(t, map[string]string{"/": `<title>Fine</title>`})
	if p, err := b.Navigate(srv.URL+"/", slow(t)); err != nil || p.Title != "Fine" {
		t.Errorf("Navigate after a failed load: %+v, %v", p, err)
	}
}

// Bad arguments are errors the model can act on, before the page is
// touched.
func TestBadArgumentsNameTheFix(t *testing.T) {
	b := &Browser{refs: newRefs()}
	if _, err := b.Press("Hyper", time.Second); err == nil || !strings.Contains(err.Error(), "Enter") {
		t.Errorf("Press(Hyper) = %v", err)
	}
	if err := b.Scroll("sideways", time.Second); err == nil || !strings.Contains(err.Error(), `"up" or "down"`) {
		t.Errorf("Scroll(sideways) = %v", err)
	}
	if err := b.Type("@e7", "x", time.Second); err == nil || !strings.Contains(err.Error(), "browser_snapshot") {
		t.Errorf("Type on an unknown ref = %v", err)
	}
}

// capText keeps head and tail on UTF-8 boundaries and counts what it
// left out.
func TestCapTextKeepsHeadAndTail(t *testing.T) {
	s := strings.Repeat("é", 600) // 1200 bytes
	out := capText(s, 300)
	head, tail, ok := strings.Cut(out, "\n[... ")
	if !ok || !strings.HasPrefix(out, "éé") || !strings.HasSuffix(out, "éé") {
		t.Fatalf("capText = %q", out)
	}
	_, tail, _ = strings.Cut(tail, "...]\n")
	if want := fmt.Sprintf("%d characters omitted", len(s)-len(head)-len(tail)); !strings.Contains(out, want) {
		t.Errorf("capText does not say %q: %q", want, out)
	}
	if len(head) != 200 || len(tail) != 100 {
		t.Errorf("kept %d head and %d tail bytes of a 300 cap", len(head), len(tail))
	}
	if capText("short", 300) != "short" || capText(s, 0) != s {
		t.Error("capText changed text within the cap")
	}
}
