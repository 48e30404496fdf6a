package session

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hermes-go/hermes/internal/browser"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// testSite is a small web app: links, a form, a list rendered by
// JavaScript, an image and a script error. It records form submissions.
type testSite struct {
	*httptest.Server
	mu          sync.Mutex
	submissions []string
}

const sitePNG = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82"

func newTestSite(t *testing.T) *testSite {
	s := &testSite{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<!doctype html><html><head><title>Shop</title></head><body>
<h1>Welcome to the shop</h1>
<nav><a href="/about">About us</a> <a href="/help">Help</a></nav>
<img src="/logo.png" alt="Shop logo">
<form action="/submit" method="post">
  <label for="name">Your name</label> <input id="name" name="name" type="text">
  <button type="submit">Send order</button>
</form>
<ul id="items"></ul>
<script>
  for (const f of ["apple", "pear", "plum"]) {
    const li = document.createElement("li"); li.textContent = "fruit " + f;
    document.getElementById("items").appendChild(li);
  }
  console.log("shop ready");
  setTimeout(() => { throw new Error("boom from the shop page"); }, 0);
</script></body></html>`)
	})
	mux.HandleFunc("/about", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>About</title><h1>About the shop</h1><p>Since 1999.</p>`)
	})
	mux.HandleFunc("/logo.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		fmt.Fprint(w, sitePNG)
	})
	mux.HandleFunc("/submit", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		s.submissions = append(s.submissions, r.PostForm.Get("name"))
		s.mu.Unlock()
		fmt.Fprint(w, `<!doctype html><title>Thanks</title><p>Order received</p>`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *testSite) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.submissions...)
}

// refOf finds the ref of `- role "name" [@eN]` in a snapshot.
func refOf(t *testing.T, snap, role, name string) string {
	m := regexp.MustCompile(`- ` + role + ` "` + regexp.QuoteMeta(name) + `"[^\n]*\[(@e\d+)\]`).FindStringSubmatch(snap)
	if m == nil {
		t.Errorf("no %s %q with a ref in snapshot:\n%s", role, name, snap)
		return "@e0"
	}
	return m[1]
}

// browserScript is a model that drives the shop: it reads each tool result
// and picks the next call, as a real model would.
type browserScript struct {
	t       *testing.T
	site    string
	typed   string
	results []string // tool results in order
	refs    map[string]string
}

func (b *browserScript) respond(r llmtest.Request) llmtest.Turn {
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &body)
	b.results = b.results[:0]
	for _, m := range body.Messages {
		if m.Role == "tool" {
			b.results = append(b.results, m.Text())
		}
	}
	call := func(name, args string) llmtest.Turn {
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: name, Args: args}}}
	}
	switch n := len(b.results); n {
	case 0:
		return call("browser_navigate", `{"url":"`+b.site+`/"}`)
	case 1, 2:
		return call("browser_snapshot", `{}`)
	case 3:
		snap := b.results[1]
		b.refs = map[string]string{"name": refOf(b.t, snap, "textbox", "Your name"),
			"send": refOf(b.t, snap, "button", "Send order"), "about": refOf(b.t, snap, "link", "About us")}
		return call("browser_console", `{}`)
	case 4:
		return call("browser_type", `{"ref":"`+b.refs["name"]+`","text":"`+b.typed+`"}`)
	case 5:
		return call("browser_snapshot", `{}`)
	case 6:
		return call("browser_click", `{"ref":"`+b.refs["send"]+`"}`)
	case 7:
		return call("browser_back", `{}`)
	case 8:
		return call("browser_snapshot", `{}`)
	case 9:
		return call("browser_click", `{"ref":"`+refOf(b.t, b.results[8], "link", "About us")+`"}`)
	case 10:
		return call("browser_vision", `{"question":"what colour is the header?"}`)
	default:
		return llmtest.Turn{Text: "done"}
	}
}

// A model browses a local site through the browser tools: it navigates,
// reads the accessibility snapshot (JS-rendered content included), types
// into the form with refs from an earlier snapshot and submits; the site
// receives the submission; the console tool reports the page's JS error.
func TestBrowserToolsDriveALocalSite(t *testing.T) {
	if browser.FindChromium() == "" {
		t.Skip("no Chromium on PATH (Debian: apt-get install chromium); .ci/run installs it")
	}
	site := newTestSite(t)
	srv := llmtest.NewServer(t)
	script := &browserScript{t: t, site: site.URL, typed: "Ada Lovelace"}
	srv.SetResponder(script.respond)
	rt := newTestRuntime(t, srv, func(o *Options) {
		o.Toolsets = []string{"browser"}
		o.Config.Config.Security.AllowPrivateURLs = true // the test site is on loopback
	})
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli:browser", Source: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(SubscribeOptions{})
	defer sub.Close()
	turn, _, err := s.Send(context.Background(), "order something", SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, turn.ID)
	if last := evs[len(evs)-1]; last.Kind != Final || last.Text != "done" {
		t.Fatalf("turn ended with %v %q; tool results:\n%s", last.Kind, last.Text, strings.Join(script.results, "\n---\n"))
	}
	res := script.results
	if !strings.Contains(res[0], `"title": "Shop"`) {
		t.Errorf("navigate result = %s", res[0])
	}
	for _, want := range []string{`heading "Welcome to the shop"`, `fruit apple`, `fruit plum`, `image "Shop logo"`} {
		if !strings.Contains(res[1], want) {
			t.Errorf("snapshot lacks %q:\n%s", want, res[1])
		}
	}
	if res[1] != res[2] {
		t.Errorf("a second snapshot of the same page changed its refs:\n%s\n---\n%s", res[1], res[2])
	}
	if !strings.Contains(res[3], "boom from the shop page") || !strings.Contains(res[3], `"exception"`) ||
		!strings.Contains(res[3], "shop ready") {
		t.Errorf("console result = %s", res[3])
	}
	if !strings.Contains(res[5], `value="Ada Lovelace"`) || !strings.Contains(res[5], script.refs["name"]+"]") {
		t.Errorf("snapshot after typing does not show the value under the same ref %s:\n%s", script.refs["name"], res[5])
	}
	if got := site.received(); len(got) != 1 || got[0] != "Ada Lovelace" {
		t.Errorf("site received %q, want one submission of the typed name", got)
	}
	if !strings.Contains(res[6], `"title": "Thanks"`) || !strings.Contains(res[7], `"title": "Shop"`) {
		t.Errorf("click/back results = %s / %s", res[6], res[7])
	}
	if !strings.Contains(res[9], `"title": "About"`) {
		t.Errorf("click on About = %s", res[9])
	}
	if !strings.Contains(res[10], "needs a model that accepts images") {
		t.Errorf("browser_vision on a text-only model = %s", res[10])
	}
}

// With security.allow_private_urls at its default (false), the host
// browser is under the same SSRF guard as web_extract: a model asking it
// to open a loopback address gets the refusal, and the server there sees
// no request.
func TestHostBrowserRefusesLoopbackByDefault(t *testing.T) {
	if browser.FindChromium() == "" {
		t.Skip("no Chromium on PATH (Debian: apt-get install chromium); .ci/run installs it")
	}
	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `<title>Internal admin</title>`)
	}))
	defer site.Close()
	srv := llmtest.NewServer(t)
	var result string
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		var body struct {
			Messages []llmtest.ChatMessage `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &body)
		for _, m := range body.Messages {
			if m.Role == "tool" {
				result = m.Text()
				return llmtest.Turn{Text: "done"}
			}
		}
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "browser_navigate", Args: `{"url":"` + site.URL + `/admin"}`}}}
	})
	rt := newTestRuntime(t, srv, func(o *Options) { o.Toolsets = []string{"browser"} })
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli:ssrf", Source: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(SubscribeOptions{})
	defer sub.Close()
	turn, _, err := s.Send(context.Background(), "open the admin page", SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, sub, turn.ID)
	if !strings.Contains(result, "private or local address") || strings.Contains(result, "Internal admin") {
		t.Errorf("browser_navigate to %s = %s, want the SSRF refusal", site.URL, result)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback site got %d requests from the browser", n)
	}
}
