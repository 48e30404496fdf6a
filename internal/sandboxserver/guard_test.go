package sandboxserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A keyless server (allowed on loopback) is out of web pages' reach
// (issue 31): a DNS-rebinding page (Host: its own name) cannot list
// sandboxes, read their tokens, create one or run commands in one, and a
// cross-origin text/plain POST cannot create one; nothing is created.
// Before, all of these were answered.
func TestKeylessServerRefusesWebPages(t *testing.T) {
	boxes := newFakeBoxes()
	srv, err := New(Config{Boxes: boxes})
	if err != nil {
		t.Fatal(err)
	}
	api, envd := httptest.NewServer(srv.APIHandler()), httptest.NewServer(srv.EnvdHandler())
	t.Cleanup(func() { api.Close(); envd.Close(); srv.Close() })
	// One sandbox made the way the SDK makes it, for the envd requests.
	sb := createSandbox(t, api.URL, `{"templateID":"base"}`)
	do := func(method, url, host, origin, ctype, body string, hdr ...string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		if body == "" {
			req.Body = http.NoBody
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	envdAuth := []string{"E2b-Sandbox-Id", sb.SandboxID, "X-Access-Token", sb.EnvdAccessToken}
	create := `{"templateID":"base","timeout":86400}`
	run := `{"process":{"cmd":"/bin/sh","args":["-c","env"]}}`
	for _, c := range []struct {
		name                          string
		method, url, host, origin, ct string
		body                          string
		hdr                           []string
		want                          int
	}{
		{"rebound list", "GET", api.URL + "/v2/sandboxes", "evil.example:3000", "", "", "", nil, 403},
		{"rebound get (token)", "GET", api.URL + "/sandboxes/" + sb.SandboxID, "evil.example:3000", "", "", "", nil, 403},
		{"rebound create", "POST", api.URL + "/v2/sandboxes", "evil.example:3000", "http://evil.example:3000", "application/json", create, nil, 403},
		{"cross-origin text/plain create", "POST", api.URL + "/sandboxes", "", "https://evil.example", "text/plain", create, nil, 403},
		{"text/plain create", "POST", api.URL + "/sandboxes", "", "", "text/plain", create, nil, 415},
		{"cross-origin kill", "DELETE", api.URL + "/sandboxes/" + sb.SandboxID, "", "https://evil.example", "", "", nil, 403},
		{"rebound envd run", "POST", envd.URL + "/process.Process/Start", "evil.example:49983", "", "application/connect+json", run, envdAuth, 403},
		{"rebound envd read", "GET", envd.URL + "/files?path=/etc/passwd", "evil.example:49983", "", "", "", envdAuth, 403},
		{"cross-origin envd upload", "POST", envd.URL + "/files?path=x", "", "https://evil.example", "multipart/form-data; boundary=b", "--b--\r\n", envdAuth, 403},
		{"text/plain envd run", "POST", envd.URL + "/process.Process/Start", "", "", "text/plain", run, envdAuth, 415},
		{"text/plain envd upload", "POST", envd.URL + "/files?path=x", "", "", "text/plain", "data", envdAuth, 415},
	} {
		if got := do(c.method, c.url, c.host, c.origin, c.ct, c.body, c.hdr...); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	if n := len(srv.list()); n != 1 {
		t.Errorf("%d sandboxes after the refused requests, want the 1 made before", n)
	}
	if boxes.wasRemoved(Task(sb.SandboxID)) {
		t.Error("a refused kill removed the sandbox")
	}
	// The SDK's own requests still work: loopback Host, no Origin, its types.
	if got := do("POST", envd.URL+"/files?path=x", "", "", "application/octet-stream", "data", envdAuth...); got != 200 {
		t.Errorf("octet-stream upload: %d", got)
	}
	if got := do("GET", api.URL+"/v2/sandboxes", "localhost:3000", "", "", "", nil...); got != 200 {
		t.Errorf("list on localhost: %d", got)
	}
}
