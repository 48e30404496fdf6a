package sandboxserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"
)

// The parsers of untrusted input: list queries, paths, create bodies and
// uploads never panic, and paths always come out absolute and clean.

func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{"state=running,paused&limit=2", "metadata=a%3Db&order=asc", "startedAfter=2026-01-01T00:00:00Z", "limit=0", "state=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, err := parseListQuery(q)
		if err == nil && (lq.limit < 1 || lq.limit > 100) {
			t.Fatalf("limit %d accepted", lq.limit)
		}
	})
}

func FuzzResolvePath(f *testing.F) {
	for _, s := range []string{"", "~", "~/a", "a/../../b", "/x/./y", "../../etc/passwd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := resolvePath(p)
		if !path.IsAbs(got) || path.Clean(got) != got {
			t.Fatalf("resolvePath(%q) = %q, not absolute and clean", p, got)
		}
	})
}

func FuzzCreateBody(f *testing.F) {
	f.Add(`{"templateID":"base","timeout":10,"envVars":{"A":"b"},"network":{"allowOut":["x.com"],"denyOut":["0.0.0.0/0"]}}`)
	f.Add(`{"templateID":"base","timeout":-1}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		srv, err := New(Config{Boxes: newFakeBoxes()})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v2/sandboxes", strings.NewReader(body))
		req.Host = "127.0.0.1:3000" // keyless: a loopback Host
		req.Header.Set("Content-Type", "application/json")
		srv.APIHandler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("body %q: %d %s", body, rec.Code, rec.Body)
		}
		if rec.Code != http.StatusCreated {
			var e apiError
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != rec.Code {
				t.Fatalf("error answer %q is not {code, message}", rec.Body)
			}
		}
	})
}

func FuzzUpload(f *testing.F) {
	f.Add("multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/a/b\"\r\n\r\nhi\r\n--b--\r\n")
	f.Add("application/octet-stream", "data")
	f.Add("multipart/form-data; boundary=", "--\r\n")
	f.Fuzz(func(t *testing.T, ctype, body string) {
		srv, err := New(Config{Boxes: newFakeBoxes(), MaxUploadBytes: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		sb := &sandbox{id: "s", token: "t", state: "running", procs: map[uint32]*proc{}, paused: make(chan struct{})}
		srv.sandboxes["s"] = sb
		req := httptest.NewRequest("POST", "/files?path=up.txt", bytes.NewBufferString(body))
		req.Host = "127.0.0.1:49983" // keyless: a loopback Host
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("E2b-Sandbox-Id", "s")
		req.Header.Set("X-Access-Token", "t")
		rec := httptest.NewRecorder()
		srv.EnvdHandler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("upload %q %q: %d %s", ctype, body, rec.Code, rec.Body)
		}
	})
}
