package sandboxserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// Keys of the tenancy tests: A and A2 are one team, B a tenant of its own.
const (
	keyA  = "key-of-team-a"
	keyA2 = "second-key-of-team-a"
	keyB  = "key-of-b"
)

func newTenantServer(t *testing.T, cfg Config) (*httptest.Server, *httptest.Server) {
	t.Helper()
	cfg.Boxes = newFakeBoxes()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	api, envd := httptest.NewServer(srv.APIHandler()), httptest.NewServer(srv.EnvdHandler())
	t.Cleanup(func() { api.Close(); envd.Close(); srv.Close() })
	return api, envd
}

func createAs(t *testing.T, api, key string) sandboxJSON {
	t.Helper()
	code, data, _ := call(t, "POST", api+"/v2/sandboxes", strings.NewReader(`{"templateID":"base","timeout":300}`), "X-API-Key", key)
	if code != http.StatusCreated {
		t.Fatalf("create as %s: %d %s", key, code, data)
	}
	var sb sandboxJSON
	if err := json.Unmarshal(data, &sb); err != nil {
		t.Fatal(err)
	}
	return sb
}

func listAs(t *testing.T, api, path, key string) []string {
	t.Helper()
	code, data, _ := call(t, "GET", api+path, nil, "X-API-Key", key)
	if code != http.StatusOK {
		t.Fatalf("list %s as %s: %d %s", path, key, code, data)
	}
	var list []sandboxDetailJSON
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range list {
		ids = append(ids, d.SandboxID)
	}
	return ids
}

// Key B listed key A's sandboxes, read A's envdAccessToken from GET
// /sandboxes/{id}, ran commands in them through envd and killed them.
// Every route answers B as for a sandbox that does not exist; the keys
// of A's team share A's sandboxes.
func TestTenantsDoNotSeeEachOther(t *testing.T) {
	api, envd := newTenantServer(t, Config{APIKeys: []string{keyB}, Teams: map[string][]string{"a": {keyA, keyA2}}})
	a := createAs(t, api.URL, keyA)
	b := createAs(t, api.URL, keyB)
	for _, path := range []string{"/v2/sandboxes", "/sandboxes"} {
		if got := listAs(t, api.URL, path, keyB); !slices.Equal(got, []string{b.SandboxID}) {
			t.Errorf("B lists %s: %v, want only its own %s", path, got, b.SandboxID)
		}
		if got := listAs(t, api.URL, path, keyA2); !slices.Equal(got, []string{a.SandboxID}) {
			t.Errorf("A's second key lists %s: %v, want its team's %s", path, got, a.SandboxID)
		}
	}
	// What B gets for A's sandbox is what it gets for one that does not exist.
	routes := []struct{ method, path, body string }{
		{"GET", "/sandboxes/%s", ""},
		{"POST", "/sandboxes/%s/timeout", `{"timeout":600}`},
		{"POST", "/sandboxes/%s/pause", ""},
		{"POST", "/sandboxes/%s/resume", `{"timeout":60}`},
		{"POST", "/sandboxes/%s/connect", `{"timeout":60}`},
		{"POST", "/v2/sandboxes/%s/connect", `{"timeout":60}`},
		{"GET", "/sandboxes/%s/metrics", ""},
		{"GET", "/v2/sandboxes/%s/logs", ""},
		{"DELETE", "/sandboxes/%s", ""},
	}
	for _, r := range routes {
		code, data, _ := call(t, r.method, api.URL+strings.Replace(r.path, "%s", a.SandboxID, 1), strings.NewReader(r.body), "X-API-Key", keyB)
		_, none, _ := call(t, r.method, api.URL+strings.Replace(r.path, "%s", "nosuchsandbox", 1), strings.NewReader(r.body), "X-API-Key", keyB)
		if code != http.StatusNotFound || strings.Contains(string(data), a.EnvdAccessToken) ||
			string(data) != strings.ReplaceAll(string(none), "nosuchsandbox", a.SandboxID) {
			t.Errorf("B %s %s on A's sandbox: %d %s, want the 404 of a missing sandbox (%s)", r.method, r.path, code, data, none)
		}
	}
	// envd: B has no token of A's sandbox; its own token does not open A's.
	envdHdr := func(id, token string) []string { return []string{"E2b-Sandbox-Id", id, "X-Access-Token", token} }
	code, data, _ := call(t, "GET", envd.URL+"/files?path=/etc/hostname", nil, envdHdr(a.SandboxID, b.EnvdAccessToken)...)
	_, none, _ := call(t, "GET", envd.URL+"/files?path=/etc/hostname", nil, envdHdr("nosuchsandbox", b.EnvdAccessToken)...)
	if code != http.StatusBadGateway || string(data) != strings.ReplaceAll(string(none), "nosuchsandbox", a.SandboxID) {
		t.Errorf("envd with B's token on A's sandbox: %d %s, want the answer of a missing sandbox: %s", code, data, none)
	}
	// A's sandbox is still there for A's team, with its token.
	code, data, _ = call(t, "GET", api.URL+"/sandboxes/"+a.SandboxID, nil, "X-API-Key", keyA2)
	var d sandboxDetailJSON
	json.Unmarshal(data, &d)
	if code != http.StatusOK || d.EnvdAccessToken != a.EnvdAccessToken || d.State != "running" {
		t.Fatalf("A's team gets its sandbox: %d %s", code, data)
	}
	if code, _, _ := call(t, "DELETE", api.URL+"/sandboxes/"+a.SandboxID, nil, "X-API-Key", keyA2); code != http.StatusNoContent {
		t.Fatalf("A's team kills its sandbox: %d", code)
	}
}

// One key made sandboxes up to --max-sandboxes and locked every other
// key out. Each tenant has its own bound (by default a fair share of the
// total); the total still holds.
func TestQuotaPerTeam(t *testing.T) {
	teams := map[string][]string{"a": {keyA, keyA2}}
	t.Run("fair share by default", func(t *testing.T) {
		api, _ := newTenantServer(t, Config{APIKeys: []string{keyB}, Teams: teams, MaxSandboxes: 4})
		createAs(t, api.URL, keyA)
		createAs(t, api.URL, keyA2)
		code, data, _ := call(t, "POST", api.URL+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`), "X-API-Key", keyA)
		if code != http.StatusTooManyRequests || !strings.Contains(string(data), "--max-sandboxes-per-team") {
			t.Fatalf("team A's third sandbox of a total of 4 among 2 tenants: %d %s, want 429", code, data)
		}
		createAs(t, api.URL, keyB)
		createAs(t, api.URL, keyB)
	})
	t.Run("total holds", func(t *testing.T) {
		api, _ := newTenantServer(t, Config{APIKeys: []string{keyB}, Teams: teams, MaxSandboxes: 3, MaxSandboxesPerTeam: 3})
		createAs(t, api.URL, keyA)
		createAs(t, api.URL, keyA2)
		createAs(t, api.URL, keyB)
		code, data, _ := call(t, "POST", api.URL+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`), "X-API-Key", keyB)
		if code != http.StatusTooManyRequests || !strings.Contains(string(data), "--max-sandboxes)") {
			t.Fatalf("a fourth sandbox past the total of 3: %d %s, want 429", code, data)
		}
	})
}

func TestKeylessServerIsOneTenant(t *testing.T) {
	api, _ := newTenantServer(t, Config{})
	sb := createAs(t, api.URL, "")
	if got := listAs(t, api.URL, "/v2/sandboxes", "anything"); !slices.Equal(got, []string{sb.SandboxID}) {
		t.Fatalf("keyless list: %v", got)
	}
}

func TestAKeyInTwoTenantsIsRefused(t *testing.T) {
	if _, err := New(Config{Boxes: newFakeBoxes(), APIKeys: []string{keyA}, Teams: map[string][]string{"a": {keyA}}}); err == nil {
		t.Fatal("a key both alone and in team a was accepted")
	}
}

func TestParseAPIKeys(t *testing.T) {
	lone, teams, err := ParseAPIKeys(strings.NewReader("# keys\nk1\n\n  team-x   k2  \nteam-x k3\nk4\n"), "keys.txt")
	if err != nil || !slices.Equal(lone, []string{"k1", "k4"}) || !slices.Equal(teams["team-x"], []string{"k2", "k3"}) || len(teams) != 1 {
		t.Fatalf("lone %v teams %v err %v", lone, teams, err)
	}
	_, _, err = ParseAPIKeys(strings.NewReader("k1\nteam secret extra\n"), "keys.txt")
	if err == nil || !strings.Contains(err.Error(), "keys.txt line 2") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("three words: %v, want the file and line and no key", err)
	}
}
