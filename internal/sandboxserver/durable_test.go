package sandboxserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// node is one run of a server on boxes and a catalog file that outlive it.
type node struct {
	srv       *Server
	api, envd string
}

// startNode starts a server on boxes with the catalog at path (a restart
// when an earlier node used them), restoring what the catalog holds.
func startNode(t *testing.T, boxes *fakeBoxes, path string, clock *testClock) (*node, RestoreReport) {
	t.Helper()
	cat, err := sandboxcatalog.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Boxes: boxes, Catalog: cat, APIKeys: []string{keyA, keyB}, Now: clock.Now,
		Templates: map[string]Template{"base": {}, "hermes": {}}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := srv.Restore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	api, envd := httptest.NewServer(srv.APIHandler()), httptest.NewServer(srv.EnvdHandler())
	t.Cleanup(func() { api.Close(); envd.Close(); srv.Close(); cat.Close() })
	return &node{srv: srv, api: api.URL, envd: envd.URL}, rep
}

func (n *node) create(t *testing.T, key, body string) sandboxJSON {
	t.Helper()
	code, data, _ := call(t, "POST", n.api+"/v2/sandboxes", strings.NewReader(body), "X-API-Key", key)
	if code != http.StatusCreated {
		t.Fatalf("create as %s: %d %s", key, code, data)
	}
	var sb sandboxJSON
	json.Unmarshal(data, &sb)
	return sb
}

func (n *node) writeFile(t *testing.T, sb sandboxJSON, name, content string) {
	t.Helper()
	code, data, _ := call(t, "POST", n.envd+"/files?path="+name, strings.NewReader(content), "E2b-Sandbox-Id", sb.SandboxID,
		"X-Access-Token", sb.EnvdAccessToken, "Content-Type", "application/octet-stream")
	if code != http.StatusOK {
		t.Fatalf("write %s in %s: %d %s", name, sb.SandboxID, code, data)
	}
}

func (n *node) readFile(t *testing.T, sb sandboxJSON, name string) (int, string) {
	t.Helper()
	code, data, _ := call(t, "GET", n.envd+"/files?path="+name, nil, "E2b-Sandbox-Id", sb.SandboxID, "X-Access-Token", sb.EnvdAccessToken)
	return code, string(data)
}

func (n *node) detail(t *testing.T, key, id string) (int, sandboxDetailJSON) {
	t.Helper()
	code, data, _ := call(t, "GET", n.api+"/sandboxes/"+id, nil, "X-API-Key", key)
	var d sandboxDetailJSON
	json.Unmarshal(data, &d)
	return code, d
}

func (n *node) connect(t *testing.T, key, id string) (int, string) {
	t.Helper()
	code, data, _ := call(t, "POST", n.api+"/sandboxes/"+id+"/connect", strings.NewReader(`{"timeout":300}`), "X-API-Key", key)
	return code, string(data)
}

// A shutdown pauses what runs and deletes nothing; the next start serves
// every sandbox again with its files, token, owner, metadata and network
// rules; formerly running ones run again with the timeout they had left
// (the downtime does not count); killed ones and other tenants' answer 404.
func TestShutdownKeepsSandboxesForTheNextStart(t *testing.T) {
	boxes, path := newFakeBoxes(), filepath.Join(t.TempDir(), sandboxcatalog.FileName)
	t0 := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	clock := &testClock{t: t0}
	a, _ := startNode(t, boxes, path, clock)
	running := a.create(t, keyA, `{"templateID":"base","timeout":100,"metadata":{"app":"x"},"network":{"allowOut":["1.1.1.1"]},"envVars":{"V":"1"}}`)
	paused := a.create(t, keyA, `{"templateID":"hermes","timeout":100}`)
	killed := a.create(t, keyA, `{"templateID":"base","timeout":100}`)
	other := a.create(t, keyB, `{"templateID":"base","timeout":100,"autoPause":true}`)
	for _, sb := range []sandboxJSON{running, paused, killed, other} {
		a.writeFile(t, sb, "kept.txt", "file of "+sb.SandboxID)
	}
	if code, _, _ := call(t, "POST", a.api+"/sandboxes/"+paused.SandboxID+"/pause", nil, "X-API-Key", keyA); code != http.StatusNoContent {
		t.Fatalf("pause: %d", code)
	}
	if code, _, _ := call(t, "DELETE", a.api+"/sandboxes/"+killed.SandboxID, nil, "X-API-Key", keyA); code != http.StatusNoContent {
		t.Fatalf("kill: %d", code)
	}
	clock.Set(t0.Add(40 * time.Second))
	if n := a.srv.Running(); n != 2 {
		t.Fatalf("%d sandboxes counted as running before the shutdown, want 2 (not the paused or the killed one)", n)
	}
	if err := a.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, data, _ := call(t, "POST", a.api+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`), "X-API-Key", keyA); code != http.StatusServiceUnavailable || !strings.Contains(string(data), `"code":503`) {
		t.Fatalf("create during the shutdown: %d %s, want E2B's 503", code, data)
	}
	for _, sb := range []sandboxJSON{running, paused, other} {
		if boxes.wasRemoved(Task(sb.SandboxID)) {
			t.Fatalf("the shutdown removed the box of sandbox %s", sb.SandboxID)
		}
	}
	if code, d := a.detail(t, keyA, running.SandboxID); code != http.StatusOK || d.State != "paused" {
		t.Fatalf("running sandbox after the shutdown: %d %s, want paused", code, d.State)
	}

	clock.Set(t0.Add(1000 * time.Second)) // the server was down for 960 s
	b, rep := startNode(t, boxes, path, clock)
	if rep != (RestoreReport{Running: 2, Paused: 1}) {
		t.Fatalf("restore: %s, want 2 running, 1 paused", rep)
	}
	code, d := b.detail(t, keyA, running.SandboxID)
	if code != http.StatusOK || d.State != "running" || !d.EndAt.Equal(t0.Add(1060*time.Second)) || d.Metadata["app"] != "x" ||
		d.Network == nil || len(d.Network.AllowOut) != 1 || d.EnvdAccessToken != running.EnvdAccessToken {
		t.Fatalf("formerly running sandbox after the restart: %d %+v; want running, its 60 s left from now, its metadata, network and token", code, d)
	}
	if sb := b.srv.lookup(running.SandboxID); sb.env["V"] != "1" || !sb.internet {
		t.Fatalf("formerly running sandbox lost its envVars or internet: %v %v", sb.env, sb.internet)
	}
	if code, body := b.readFile(t, running, "kept.txt"); code != http.StatusOK || body != "file of "+running.SandboxID {
		t.Fatalf("file of the formerly running sandbox: %d %q", code, body)
	}
	if code, d := b.detail(t, keyA, paused.SandboxID); code != http.StatusOK || d.State != "paused" {
		t.Fatalf("paused sandbox after the restart: %d %s, want paused", code, d.State)
	}
	if code, body := b.connect(t, keyA, paused.SandboxID); code != http.StatusCreated {
		t.Fatalf("connect to the paused sandbox after the restart: %d %s, want 201", code, body)
	}
	if code, body := b.readFile(t, paused, "kept.txt"); code != http.StatusOK || body != "file of "+paused.SandboxID {
		t.Fatalf("file of the paused sandbox: %d %q", code, body)
	}
	if code, body := b.connect(t, keyA, killed.SandboxID); code != http.StatusNotFound || !strings.Contains(body, `"code":404`) {
		t.Fatalf("connect to the killed sandbox: %d %s, want E2B's 404", code, body)
	}
	if code, body := b.connect(t, keyA, other.SandboxID); code != http.StatusNotFound {
		t.Fatalf("another tenant's sandbox after the restart: %d %s, want 404", code, body)
	}
	if code, _ := b.detail(t, keyB, other.SandboxID); code != http.StatusOK {
		t.Fatalf("its own tenant's sandbox after the restart: %d", code)
	}
}

// After a crash (no shutdown: the records still say running), the next
// start runs what ran with the time left until its recorded end; one
// whose end passed while the server was down gets its timeout's due.
func TestRestoreAfterACrash(t *testing.T) {
	boxes, path := newFakeBoxes(), filepath.Join(t.TempDir(), sandboxcatalog.FileName)
	t0 := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	clock := &testClock{t: t0}
	a, _ := startNode(t, boxes, path, clock)
	long := a.create(t, keyA, `{"templateID":"base","timeout":3600}`)
	short := a.create(t, keyA, `{"templateID":"base","timeout":60}`)
	shortPause := a.create(t, keyA, `{"templateID":"base","timeout":60,"autoPause":true}`)
	// kill -9: a's records stay as they are; its boxes died with it.
	a.srv.cfg.Catalog = nil

	clock.Set(t0.Add(120 * time.Second))
	b, rep := startNode(t, boxes, path, clock)
	if rep != (RestoreReport{Running: 1, Expired: 2}) {
		t.Fatalf("restore after a crash: %s, want 1 running, 2 expired", rep)
	}
	if code, d := b.detail(t, keyA, long.SandboxID); code != http.StatusOK || d.State != "running" || !d.EndAt.Equal(t0.Add(3600*time.Second)) {
		t.Fatalf("long sandbox: %d %s %v", code, d.State, d.EndAt)
	}
	if code, _ := b.detail(t, keyA, short.SandboxID); code != http.StatusNotFound {
		t.Fatalf("sandbox whose timeout passed while the server was down: %d, want 404 (killed)", code)
	}
	if code, d := b.detail(t, keyA, shortPause.SandboxID); code != http.StatusOK || d.State != "paused" {
		t.Fatalf("autoPause sandbox whose timeout passed while the server was down: %d %s, want paused", code, d.State)
	}
}

// A record whose layer is gone (removed on the host) is reported and
// dropped at start; connecting answers 404, never a fresh sandbox. A
// paused sandbox whose layer goes while the server runs answers the same.
func TestGoneLayerIsDroppedNotRecreated(t *testing.T) {
	boxes, path := newFakeBoxes(), filepath.Join(t.TempDir(), sandboxcatalog.FileName)
	clock := &testClock{t: time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)}
	a, _ := startNode(t, boxes, path, clock)
	gone := a.create(t, keyA, `{"templateID":"base","timeout":300}`)
	later := a.create(t, keyA, `{"templateID":"base","timeout":300}`)
	a.srv.Shutdown(context.Background())
	boxes.Remove(Task(gone.SandboxID))

	b, rep := startNode(t, boxes, path, clock)
	if rep.Gone != 1 || rep.Running != 1 {
		t.Fatalf("restore: %s, want 1 gone, 1 running", rep)
	}
	if code, body := b.connect(t, keyA, gone.SandboxID); code != http.StatusNotFound {
		t.Fatalf("connect to a sandbox whose layer is gone: %d %s, want 404", code, body)
	}
	if boxes.HasLayer(Task(gone.SandboxID)) {
		t.Fatal("connect made a fresh box for a sandbox whose layer is gone")
	}
	call(t, "POST", b.api+"/sandboxes/"+later.SandboxID+"/pause", nil, "X-API-Key", keyA)
	boxes.Remove(Task(later.SandboxID))
	if code, body := b.connect(t, keyA, later.SandboxID); code != http.StatusNotFound || !strings.Contains(body, "no longer exists") {
		t.Fatalf("connect to a paused sandbox whose layer went: %d %s, want 404 saying so", code, body)
	}
	if boxes.HasLayer(Task(later.SandboxID)) {
		t.Fatal("connect made a fresh box for a paused sandbox whose layer went")
	}
	recs, _ := b.srv.cfg.Catalog.List(context.Background(), "local")
	if len(recs) != 0 {
		t.Fatalf("the catalog still holds %d records", len(recs))
	}
}

// A create the catalog cannot record is refused (503): a restart would
// lose it.
func TestCreateRefusedWhenTheCatalogFails(t *testing.T) {
	boxes, path := newFakeBoxes(), filepath.Join(t.TempDir(), sandboxcatalog.FileName)
	a, _ := startNode(t, boxes, path, &testClock{t: time.Now()})
	a.srv.cfg.Catalog.Close()
	code, data, _ := call(t, "POST", a.api+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`), "X-API-Key", keyA)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(data), "catalog") {
		t.Fatalf("create with a failing catalog: %d %s, want 503 naming the catalog", code, data)
	}
	if len(a.srv.list()) != 0 {
		t.Fatal("the refused sandbox is kept")
	}
}
