package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// newAuxRuntime is newTestRuntime with more config.yaml (extra) and
// Options.ModelTitles as a front end holding conversations sets it.
func newAuxRuntime(t *testing.T, srv *llmtest.Server, extra string, modelTitles bool) *Runtime {
	t.Helper()
	home, work := t.TempDir(), t.TempDir()
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + srv.URL + "\n  api_key: main-key-0123456789\n" +
		"terminal:\n  cwd: " + work + "\n" + extra
	if !strings.Contains(extra, "compression:") {
		cfg += "compression:\n  enabled: false\n"
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := config.Load(home, config.LoadOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(context.Background(), Options{Config: loaded, Home: home, UserHome: t.TempDir(),
		Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} }, Warn: func(s string) { t.Log(s) }, ModelTitles: modelTitles})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// isTitleRequest tells the title model's request from a turn's.
func isTitleRequest(r llmtest.Request) bool {
	return strings.Contains(string(r.Body), "You write the title of a conversation")
}

// titleRequests are the title calls among reqs.
func titleRequests(reqs []llmtest.Request) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range reqs {
		if isTitleRequest(r) {
			out = append(out, r)
		}
	}
	return out
}

func firstExchange(t *testing.T, rt *Runtime, key, source, text string) *Session {
	t.Helper()
	ctx := context.Background()
	s, err := rt.Open(ctx, OpenOptions{Key: key, Source: source})
	if err != nil {
		t.Fatal(err)
	}
	tu, _, err := s.Send(ctx, text, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tu.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func storedTitle(t *testing.T, rt *Runtime, s *Session) string {
	t.Helper()
	st, err := rt.Store().Session(context.Background(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	return st.Title
}

// After the first exchange the title model (auxiliary.title_generation.model
// on the main provider) writes the title in the background: the answer
// does not wait for it, the fallback (the first prompt) is there at once,
// and the stored title is the model's answer sanitised (label, Markdown,
// quotes, escape and bidi characters, final period and extra lines gone).
// A second session given the same title gets " #2".
func TestModelWritesTheTitleAfterTheFirstExchange(t *testing.T) {
	srv := llmtest.NewServer(t)
	release := make(chan struct{})
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if isTitleRequest(r) {
			<-release
			return llmtest.Turn{Text: "**Title:** \"Fix\x1b[31m the nightly\u202e deploy.\"\n\nI chose this title because..."}
		}
		return echo(r)
	})
	rt := newAuxRuntime(t, srv, "auxiliary:\n  title:\n    model: title-model\n", false)
	a := firstExchange(t, rt, "a", "cli", "the deploy fails every night, please look")
	// The turn ended while the title call is held open: the answer did not wait.
	if got := storedTitle(t, rt, a); got != "the deploy fails every night, please look" {
		t.Errorf("title while the title model is thinking = %q, want the first prompt", got)
	}
	close(release)
	rt.titles.Wait()
	if got := storedTitle(t, rt, a); got != "Fix the nightly deploy" {
		t.Errorf("model-written title = %q, want %q", got, "Fix the nightly deploy")
	}
	tr := titleRequests(srv.Requests())
	if len(tr) != 1 {
		t.Fatalf("%d title requests, want 1", len(tr))
	}
	if m := tr[0].JSON()["model"]; m != "title-model" {
		t.Errorf("title request model = %v, want the auxiliary title model", m)
	}
	if body := string(tr[0].Body); !strings.Contains(body, "the deploy fails every night") || !strings.Contains(body, "echo: ") {
		t.Errorf("title request does not carry the first exchange: %s", body)
	}
	b := firstExchange(t, rt, "b", "cli", "again the deploy")
	rt.titles.Wait()
	if got := storedTitle(t, rt, b); got != "Fix the nightly deploy #2" {
		t.Errorf("second session's model title = %q, want it made unique", got)
	}
}

// A title call that fails keeps the first prompt as the title; a title the
// person set while the title model was writing wins.
func TestTitleFallbackAndRenameWin(t *testing.T) {
	srv := llmtest.NewServer(t)
	var mu sync.Mutex
	fail := true
	release := make(chan struct{})
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if isTitleRequest(r) {
			mu.Lock()
			f := fail
			mu.Unlock()
			if f {
				return llmtest.Turn{Status: 400, Error: "model not found"}
			}
			<-release
			return llmtest.Turn{Text: "A model title"}
		}
		return echo(r)
	})
	rt := newAuxRuntime(t, srv, "", true)
	a := firstExchange(t, rt, "a", "cli", "say hi")
	rt.titles.Wait()
	if got := storedTitle(t, rt, a); got != "say hi" {
		t.Errorf("title after a failed title call = %q, want the fallback %q", got, "say hi")
	}
	if n := len(titleRequests(srv.Requests())); n != 1 {
		t.Errorf("%d title requests, want 1 (the main model titles REPL sessions)", n)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	b := firstExchange(t, rt, "b", "telegram", "what is the weather")
	if err := rt.Store().SetTitle(context.Background(), b.ID(), "Weather talk"); err != nil { // sessions rename
		t.Fatal(err)
	}
	close(release)
	rt.titles.Wait()
	if got := storedTitle(t, rt, b); got != "Weather talk" {
		t.Errorf("the person's title became %q", got)
	}
}

// One-shot runs (-z, -Q: source oneshot), cron runs and API-server
// requests make no title call with the main model; with a title model
// configured, they do. auxiliary.title_generation.enabled: false makes none.
func TestNoTitleCallForOneShotRunsUnlessConfigured(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		want        int
	}{
		{"default", "", 0},
		{"configured", "auxiliary:\n  title_generation:\n    model: small\n", 3},
		{"disabled", "auxiliary:\n  title_generation:\n    enabled: false\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
				if isTitleRequest(r) {
					return llmtest.Turn{Text: "Titled"}
				}
				return echo(r)
			})
			rt := newAuxRuntime(t, srv, c.extra, true)
			for i, source := range []string{"oneshot", CronSource, "api_server"} {
				firstExchange(t, rt, source, source, "prompt "+string(rune('a'+i)))
			}
			rt.titles.Wait()
			if n := len(titleRequests(srv.Requests())); n != c.want {
				t.Errorf("%d title requests for one-shot, cron and API sessions, want %d", n, c.want)
			}
		})
	}
	if rt := newAuxRuntime(t, llmtest.NewServer(t), "auxiliary:\n  title_generation:\n    enabled: false\n", true); rt.modelTitles("cli") {
		t.Error("enabled: false still titles REPL sessions with a model")
	}
}

// A title model on its own endpoint gets its own key, never the main
// model's; compression summaries go to auxiliary.compression's model.
func TestAuxiliaryEndpointAndCompressionModel(t *testing.T) {
	main := llmtest.NewServer(t)
	main.SetResponder(echo)
	aux := llmtest.NewServer(t)
	aux.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if isTitleRequest(r) {
			return llmtest.Turn{Text: "Side title"}
		}
		return llmtest.Turn{Text: "summary of the early talk"}
	})
	rt := newAuxRuntime(t, main, "auxiliary:\n  title_generation:\n    base_url: "+aux.URL+"\n    api_key: aux-key-0123456789\n    model: tiny\n"+
		"  compression:\n    provider: custom\n    base_url: "+aux.URL+"\n    model: summariser\n"+
		"compression:\n  protect_first_n: 1\n  protect_last_n: 1\n", false)
	s := firstExchange(t, rt, "a", "cli", "one")
	rt.titles.Wait()
	if got := storedTitle(t, rt, s); got != "Side title" {
		t.Errorf("title = %q, want the title endpoint's answer", got)
	}
	for _, text := range []string{"two", "three", "four"} {
		tu, _, err := s.Send(context.Background(), text, SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tu.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := s.Compress(context.Background()); err != nil || !done {
		t.Fatalf("Compress = %v, %v", done, err)
	}
	var sawTitle, sawSummary bool
	for _, r := range aux.Requests() {
		if auth := r.Header.Get("Authorization"); strings.Contains(auth, "main-key") {
			t.Errorf("the main model's key reached the auxiliary endpoint: %q", auth)
		}
		if isTitleRequest(r) {
			sawTitle = r.JSON()["model"] == "tiny" && r.Header.Get("Authorization") == "Bearer aux-key-0123456789"
		} else {
			sawSummary = r.JSON()["model"] == "summariser"
		}
	}
	if !sawTitle || !sawSummary {
		t.Errorf("auxiliary endpoint requests: title with its model and key %v, summary with summariser %v", sawTitle, sawSummary)
	}
	for _, r := range main.Requests() {
		if isTitleRequest(r) || strings.Contains(string(r.Body), "Summarise this conversation excerpt") {
			t.Errorf("an auxiliary request went to the main model: %.200s", r.Body)
		}
	}
}

// sanitizeTitle keeps what a title may hold from whatever a model wrote.
func TestSanitizeTitle(t *testing.T) {
	for in, want := range map[string]string{
		"<think>hmm, a title</think>\n\n# Rust borrow checker help": "Rust borrow checker help",
		"\"Quarterly report\".":                   "Quarterly report",
		"Title: `CSV import`\nmore":               "CSV import",
		"\x07\x1b]0;pwned\x07 Docker\u200b setup": "Docker setup",
		"   \n\n":                   "",
		strings.Repeat("word ", 40): strings.TrimSpace(titleFrom(strings.Repeat("word ", 40))),
	} {
		got := sanitizeTitle(in)
		if got != want {
			t.Errorf("sanitizeTitle(%q) = %q, want %q", in, got, want)
		}
		if len([]rune(got)) > titleWords || strings.ContainsAny(got, "\n\r\x1b\u200b") {
			t.Errorf("sanitizeTitle(%q) = %q: too long or holds control characters", in, got)
		}
	}
}
