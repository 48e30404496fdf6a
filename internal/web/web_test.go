package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/local"
)

// tinyPDF builds a one-page PDF showing lines in Helvetica, with a correct
// cross-reference table.
func tinyPDF(lines ...string) []byte {
	var content strings.Builder
	content.WriteString("BT /F1 14 Tf 72 720 Td 18 TL\n")
	for _, l := range lines {
		fmt.Fprintf(&content, "(%s) Tj T*\n", l)
	}
	content.WriteString("ET")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", content.Len(), content.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// A saved article page reads as markdown: title, headings, paragraphs,
// list and links kept; navigation, sidebar ads and footer dropped.
func TestExtractArticleAsMarkdown(t *testing.T) {
	html, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Extract(Page{URL: "https://coastal.example/tide-pools", Status: 200, ContentType: "text/html; charset=utf-8", Body: html}, 20000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Title, "Tide pools of the northern coast") {
		t.Errorf("title = %q", d.Title)
	}
	for _, want := range []string{"## Life in the lower pools", "**periwinkles**", "- Visit two hours either side of low tide.",
		"[tide tables](https://example.org/tides)", "purple sea urchin"} {
		if !strings.Contains(d.Content, want) {
			t.Errorf("markdown lacks %q:\n%s", want, d.Content)
		}
	}
	for _, junk := range []string{"waterproof boots", "Cookie settings", "Ten best beaches"} {
		if strings.Contains(d.Content, junk) {
			t.Errorf("markdown keeps page chrome %q:\n%s", junk, d.Content)
		}
	}
	capped, err := Extract(Page{URL: "https://coastal.example/x", Status: 200, ContentType: "text/html", Body: html}, 100)
	if err != nil || !capped.Truncated || !strings.Contains(capped.Content, "[... truncated: 100 of") {
		t.Errorf("capped = %+v, %v", capped, err)
	}
}

// A PDF reads as its text.
func TestExtractPDFText(t *testing.T) {
	pdf := tinyPDF("Quarterly report 2026", "Revenue grew by 12 percent.")
	d, err := Extract(Page{URL: "https://reports.example/q3.pdf", Status: 200, ContentType: "application/pdf", Body: pdf}, 20000)
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(d.Content), " ")
	if !strings.Contains(flat, "Quarterly report 2026") || !strings.Contains(flat, "Revenue grew by 12 percent.") {
		t.Errorf("PDF text = %q", d.Content)
	}
	if _, err := Extract(Page{URL: "https://x.example/broken.pdf", Status: 200, ContentType: "application/pdf", Body: []byte("%PDF-1.4 garbage")}, 100); err == nil {
		t.Error("a broken PDF gave no error")
	}
}

// An HTTP error and an unreadable type are errors that name the URL.
func TestExtractErrors(t *testing.T) {
	if _, err := Extract(Page{URL: "https://x.example/a", Status: 404, Body: []byte("not here")}, 100); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("404: %v", err)
	}
	if _, err := Extract(Page{URL: "https://x.example/a.zip", Status: 200, ContentType: "application/zip", Body: []byte("PK")}, 100); err == nil || !strings.Contains(err.Error(), "a.zip") {
		t.Errorf("zip: %v", err)
	}
}

// The host fetcher refuses loopback addresses unless private URLs are
// allowed (SSRF guard), and reads pages otherwise.
func TestHTTPFetcherGuardsPrivateAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<p>hi</p>") }))
	defer srv.Close()
	if _, err := NewHTTPFetcher(false).Fetch(context.Background(), "s", srv.URL); err == nil || !strings.Contains(err.Error(), "allow_private_urls") {
		t.Errorf("loopback fetch: %v, want the SSRF refusal", err)
	}
	p, err := NewHTTPFetcher(true).Fetch(context.Background(), "s", srv.URL)
	if err != nil || p.Status != 200 || string(p.Body) != "<p>hi</p>" {
		t.Errorf("allowed fetch = %+v, %v", p, err)
	}
}

// web_search's backend comes from the environment as in Hermes; none
// configured means no searcher; SearXNG answers through its JSON API.
func TestSearxngBackend(t *testing.T) {
	var gotQuery, gotFormat string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery, gotFormat = r.URL.Query().Get("q"), r.URL.Query().Get("format")
		if r.URL.Path != "/search" {
			http.NotFound(w, r)
			return
		}
		var items []string
		for i := range 8 {
			items = append(items, fmt.Sprintf(`{"title":"Result %d","url":"https://r%d.example/","content":"about tide pools %d"}`, i, i, i))
		}
		fmt.Fprintf(w, `{"query":"x","results":[%s]}`, strings.Join(items, ","))
	}))
	defer srv.Close()
	none, err := NewSearcher("", func(string) string { return "" })
	if none != nil || err != nil {
		t.Fatalf("no keys: %v %v, want no searcher", none, err)
	}
	if _, err := NewSearcher("tavily", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "TAVILY_API_KEY") {
		t.Errorf("tavily without key: %v", err)
	}
	env := map[string]string{"SEARXNG_URL": srv.URL + "/", "TAVILY_API_KEY": "tvly-x"}
	s, err := NewSearcher("", func(k string) string { return env[k] })
	if err != nil || s.Name != "searxng" {
		t.Fatalf("searcher = %+v, %v", s, err)
	}
	res, err := s.Search(context.Background(), "tide pools")
	if err != nil {
		t.Fatal(err)
	}
	if gotQuery != "tide pools" || gotFormat != "json" {
		t.Errorf("request q=%q format=%q", gotQuery, gotFormat)
	}
	if len(res) != MaxResults || res[0].Title != "Result 0" || res[0].URL != "https://r0.example/" || res[0].Description != "about tide pools 0" {
		t.Errorf("results = %+v", res)
	}
}

// A page streamed without a length (chunked) past the body cap is refused
// by the box fetcher too; curl's --max-filesize only stops bodies that
// announce their size, so the whole stream was read into memory.
func TestEnvFetcherCapsChunkedBodies(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on PATH")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for i := 0; i < MaxBodyBytes>>20+2; i++ {
			w.Write(chunk)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	be, err := local.New(t.TempDir(), nil, func() []string { return []string{"PATH=/usr/bin:/bin"} })
	if err != nil {
		t.Fatal(err)
	}
	f := &EnvFetcher{Open: func(ctx context.Context, id string) (backend.Environment, error) { return be.Open(ctx, id) }}
	p, err := f.Fetch(context.Background(), "s", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("chunked %d MiB body: got %d bytes, err %v; want the size refusal", MaxBodyBytes>>20+2, len(p.Body), err)
	}
}

// The SSRF guard sees through IPv4-mapped and NAT64 IPv6 forms of
// private IPv4 addresses.
func TestCheckPublicSeesEmbeddedIPv4(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b:1::c0a8:101", "fd00:ec2::254", "::1", "100.100.100.200"} {
		if CheckPublic(netip.MustParseAddr(a)) == nil {
			t.Errorf("%s passed the private-address check", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "64:ff9b::5db8:d822", "2606:4700::1111"} {
		if err := CheckPublic(netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
}
