package sandboxserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

const testFleetToken = "fleet-token-for-tests-0123"

type testNode struct {
	srv       *Server
	api, envd *httptest.Server
}

// newTestFleet starts nodes a and b (fake boxes) on one PostgreSQL catalog
// whose clock is clock.
func newTestFleet(t testing.TB, clock *testClock) map[string]*testNode {
	url, schema := postgrestest.Schema(t)
	return newTestFleetAt(t, clock, url, schema)
}

// newTestFleetAt starts nodes a and b on the catalog at url and schema.
func newTestFleetAt(t testing.TB, clock *testClock, url, schema string) map[string]*testNode {
	nodes := map[string]*testNode{}
	for _, name := range []string{"a", "b"} {
		cat, err := sandboxcatalog.OpenPostgres(context.Background(), url, schema)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(Config{Boxes: newFakeBoxes(), Catalog: cat, Node: name, APIKeys: []string{testKey, "other-key-for-tests"}, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		n := &testNode{srv: srv, api: httptest.NewServer(srv.APIHandler()), envd: httptest.NewServer(srv.EnvdHandler())}
		self := sandboxcatalog.Node{Name: name, APIAddr: n.api.Listener.Addr().String(), EnvdAddr: n.envd.Listener.Addr().String(),
			CPU: 4, MemoryMB: 4096, MaxSandboxes: 10}
		if err := srv.JoinFleet(FleetConfig{Catalog: cat, Self: self, Token: testFleetToken, Need: sandboxcatalog.Need{CPU: 1, MemoryMB: 512}, Heartbeat: time.Hour, DownAfter: 15 * time.Second}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := srv.RunFleet(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); n.api.Close(); n.envd.Close(); srv.Close(); cat.Close() })
		nodes[name] = n
	}
	return nodes
}

// Any node answers any request: creates through a spread over a and b
// (least loaded, a on a tie), every call reaches the owner through either
// node, envd requests too (header and Host form), other tenants get 404,
// and a down node's sandbox answers 503 naming the node.
func TestFleetRouting(t *testing.T) {
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	nodes := newTestFleet(t, clock)
	a, b := nodes["a"], nodes["b"]
	first := createSandbox(t, a.api.URL, `{"templateID":"base"}`)
	second := createSandbox(t, a.api.URL, `{"templateID":"base"}`)
	if a.srv.lookup(first.SandboxID) == nil || b.srv.lookup(second.SandboxID) == nil {
		t.Fatalf("placement: first on a %v, second on b %v; want a tie to a, then b (least loaded)",
			a.srv.lookup(first.SandboxID) != nil, b.srv.lookup(second.SandboxID) != nil)
	}
	for _, via := range []*testNode{a, b} {
		for _, sb := range []sandboxJSON{first, second} {
			if code, data, _ := call(t, "GET", via.api.URL+"/sandboxes/"+sb.SandboxID, nil, "X-API-Key", testKey); code != 200 {
				t.Errorf("get %s: %d %s", sb.SandboxID, code, data)
			}
			if code, _, _ := call(t, "GET", via.api.URL+"/sandboxes/"+sb.SandboxID, nil, "X-API-Key", "other-key-for-tests"); code != 404 {
				t.Errorf("another tenant's get of %s: %d, want 404", sb.SandboxID, code)
			}
		}
		code, data, _ := call(t, "GET", via.api.URL+"/v2/sandboxes", nil, "X-API-Key", testKey)
		var listed []sandboxDetailJSON
		if json.Unmarshal(data, &listed); code != 200 || len(listed) != 2 {
			t.Errorf("list: %d %s, want both", code, data)
		}
	}
	// envd through a for b's sandbox: the header, then the Host form.
	read := func(host string, headers ...string) (int, string) {
		req, _ := http.NewRequest("GET", a.envd.URL+"/files?path=/home/user/.hermes/.sandbox", nil)
		req.Host = host
		req.Header.Set("X-Access-Token", second.EnvdAccessToken)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		sb.Write(buf[:n])
		return resp.StatusCode, sb.String()
	}
	if code, body := read("", "E2b-Sandbox-Id", second.SandboxID); code != 200 || strings.TrimSpace(body) != second.SandboxID {
		t.Errorf("envd through a, header: %d %q", code, body)
	}
	if code, body := read("49983-" + second.SandboxID + ".fleet.example"); code != 200 || strings.TrimSpace(body) != second.SandboxID {
		t.Errorf("envd through a, Host form: %d %q", code, body)
	}
	// Kill through a reaches b.
	if code, data, _ := call(t, "DELETE", a.api.URL+"/sandboxes/"+second.SandboxID, nil, "X-API-Key", testKey); code != 204 || b.srv.lookup(second.SandboxID) != nil {
		t.Fatalf("kill through a: %d %s", code, data)
	}
	third := createSandbox(t, a.api.URL, `{"templateID":"base"}`)
	if b.srv.lookup(third.SandboxID) == nil {
		t.Fatal("third sandbox not on b (the least loaded)")
	}
	clock.Set(clock.Now().Add(time.Minute)) // no heartbeat from b for a minute: down
	code, data, _ := call(t, "GET", a.api.URL+"/sandboxes/"+third.SandboxID, nil, "X-API-Key", testKey)
	var e apiError
	if json.Unmarshal(data, &e); code != 503 || e.Code != 503 || !strings.Contains(e.Message, "node b, which is down") {
		t.Fatalf("a down node's sandbox: %d %s", code, data)
	}
}

// Node-to-node calls need the fleet token; a client cannot claim a tenant.
func TestFleetTokenRequired(t *testing.T) {
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	nodes := newTestFleet(t, clock)
	sb := createSandbox(t, nodes["a"].api.URL, `{"templateID":"base"}`)
	tenantOfKey := string(keyTenant(testKey))
	url := nodes["a"].api.URL + "/sandboxes/" + sb.SandboxID
	if code, _, _ := call(t, "GET", url, nil, FleetHeader, "wrong-token-0123456789", TenantHeader, tenantOfKey); code != 401 {
		t.Errorf("a wrong fleet token: %d, want 401", code)
	}
	if code, _, _ := call(t, "GET", url, nil, "X-API-Key", "other-key-for-tests", TenantHeader, tenantOfKey); code != 404 {
		t.Errorf("a client's tenant header: %d, want 404 (its own tenant)", code)
	}
	if code, _, _ := call(t, "GET", url, nil, FleetHeader, testFleetToken, TenantHeader, tenantOfKey); code != 200 {
		t.Errorf("the fleet token: %d, want 200", code)
	}
}

func TestEnvdSandboxIDFromHost(t *testing.T) {
	for host, want := range map[string]string{"49983-abc123.e2b.app": "abc123", "49983-abc.localhost:8080": "abc",
		"127.0.0.1:49983": "", "x-abc.example": "", "-abc.example": "", "49983-.example": ""} {
		r := httptest.NewRequest("GET", "/files", nil)
		r.Host = host
		if got := envdSandboxID(r); got != want {
			t.Errorf("Host %q: %q, want %q", host, got, want)
		}
	}
}
