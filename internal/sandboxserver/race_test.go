package sandboxserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// openTestCatalog is a SQLite catalog in the test's directory.
func openTestCatalog(t *testing.T) sandboxcatalog.Catalog {
	t.Helper()
	cat, err := sandboxcatalog.OpenSQLite(filepath.Join(t.TempDir(), "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// noRecord fails t if the catalog of n still holds sandbox id.
func noRecord(t *testing.T, n *node, id string) {
	t.Helper()
	recs, err := n.srv.cfg.Catalog.List(context.Background(), n.srv.cfg.Node)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == id {
			t.Errorf("the catalog still holds killed sandbox %s (state %s)", id, r.State)
		}
	}
}

// A connect whose box start is under way when the sandbox is killed
// answers 404 and leaves no box: the kill's removal waits for the start
// (before the fix the box was removed first and the resume made it again,
// answering 201 for a sandbox that no longer existed).
func TestConnectRacingKillDoesNotResurrect(t *testing.T) {
	boxes := newFakeBoxes()
	n, _ := startNode(t, boxes, filepath.Join(t.TempDir(), "catalog.db"), &testClock{t: time.Now()})
	sb := n.create(t, keyA, `{"templateID":"base","timeout":300}`)
	if code, _, _ := call(t, "POST", n.api+"/sandboxes/"+sb.SandboxID+"/pause", nil, "X-API-Key", keyA); code != http.StatusNoContent {
		t.Fatalf("pause: %d", code)
	}
	task := Task(sb.SandboxID)
	opening, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	boxes.beforeOpen = func(got string) {
		if got == task {
			once.Do(func() { close(opening); <-release })
		}
	}
	answered := make(chan int, 1)
	go func() {
		code, _, _ := call(t, "POST", n.api+"/sandboxes/"+sb.SandboxID+"/connect", nil, "X-API-Key", keyA)
		answered <- code
	}()
	waitfor.Recv(t, opening, "the connect's box start")
	if code, data, _ := call(t, "DELETE", n.api+"/sandboxes/"+sb.SandboxID, nil, "X-API-Key", keyA); code != http.StatusNoContent {
		t.Fatalf("kill during the resume: %d %s", code, data)
	}
	close(release)
	if code := waitfor.Recv(t, answered, "the connect's answer"); code != http.StatusNotFound {
		t.Errorf("a connect that lost to a kill answered %d, want 404", code)
	}
	n.srv.removals.Wait()
	if boxes.HasLayer(task) {
		t.Errorf("the killed sandbox's box was made again by the resume racing the kill")
	}
	if code, _ := n.connect(t, keyA, sb.SandboxID); code != http.StatusNotFound {
		t.Errorf("connect after the kill: %d, want 404", code)
	}
	noRecord(t, n, sb.SandboxID)
}

// raceConnectsAndAKill has clients connect to sandbox id through the
// APIs in connects (in turn) while one kills it through kill: every
// answer is a success or 404 (never 500, never a hang), and after the
// kill every connect and get through any of them is 404.
func raceConnectsAndAKill(t *testing.T, id, kill string, connects []string) {
	t.Helper()
	const clients = 16
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients + 1 {
		wg.Go(func() {
			<-start
			method, url := "POST", connects[i%len(connects)]+"/sandboxes/"+id+"/connect"
			if i == clients/2 {
				method, url = "DELETE", kill+"/sandboxes/"+id
			}
			code, data, _ := call(t, method, url, nil, "X-API-Key", testKey)
			switch {
			case method == "DELETE" && code != http.StatusNoContent:
				t.Errorf("the kill answered %d %s", code, data)
			case code != http.StatusOK && code != http.StatusCreated && code != http.StatusNoContent && code != http.StatusNotFound:
				t.Errorf("%s %s answered %d %s", method, url, code, data)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, api := range append(connects, kill) {
		if code, data, _ := call(t, "POST", api+"/sandboxes/"+id+"/connect", nil, "X-API-Key", testKey); code != http.StatusNotFound {
			t.Errorf("connect after the kill through %s: %d %s, want 404", api, code, data)
		}
		if code, _, _ := call(t, "GET", api+"/sandboxes/"+id, nil, "X-API-Key", testKey); code != http.StatusNotFound {
			t.Errorf("get after the kill through %s: %d, want 404", api, code)
		}
	}
}

// N clients connect to one sandbox while another kills it, paused or
// running (raceConnectsAndAKill); no box or catalog row is left.
func TestConnectsRacingAKill(t *testing.T) {
	boxes := newFakeBoxes()
	srv, err := New(Config{Boxes: boxes, Catalog: openTestCatalog(t), APIKeys: []string{testKey}})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv.APIHandler())
	t.Cleanup(func() { api.Close(); srv.Close() })
	n := &node{srv: srv, api: api.URL}
	for round := range 12 {
		sb := createSandbox(t, api.URL, `{"templateID":"base","timeout":300}`)
		if round%2 == 0 {
			if code, _, _ := call(t, "POST", api.URL+"/sandboxes/"+sb.SandboxID+"/pause", nil, "X-API-Key", testKey); code != http.StatusNoContent {
				t.Fatalf("pause: %d", code)
			}
		}
		raceConnectsAndAKill(t, sb.SandboxID, api.URL, []string{api.URL})
		srv.removals.Wait()
		if boxes.HasLayer(Task(sb.SandboxID)) {
			t.Errorf("round %d: the killed sandbox's box is left", round)
		}
		noRecord(t, n, sb.SandboxID)
	}
}

// The same race through the fleet: a sandbox of node b, connected to
// through a and b while a kills it; no box is left on b and no row in the
// fleet's catalog.
func TestConnectsRacingAKillThroughTheFleet(t *testing.T) {
	nodes := newTestFleet(t, &testClock{t: time.Unix(1_800_000_000, 0)})
	a, b := nodes["a"], nodes["b"]
	createSandbox(t, a.api.URL, `{"templateID":"base","timeout":300}`) // a, on the tie
	for round := range 6 {
		sb := createSandbox(t, a.api.URL, `{"templateID":"base","timeout":300}`)
		if b.srv.lookup(sb.SandboxID) == nil {
			t.Fatalf("round %d: sandbox not placed on b", round)
		}
		if round%2 == 0 {
			if code, _, _ := call(t, "POST", a.api.URL+"/sandboxes/"+sb.SandboxID+"/pause", nil, "X-API-Key", testKey); code != http.StatusNoContent {
				t.Fatalf("pause through a: %d", code)
			}
		}
		raceConnectsAndAKill(t, sb.SandboxID, a.api.URL, []string{a.api.URL, b.api.URL})
		b.srv.removals.Wait()
		if b.srv.cfg.Boxes.(*fakeBoxes).HasLayer(Task(sb.SandboxID)) {
			t.Errorf("round %d: the killed sandbox's box is left on b", round)
		}
		if _, found, err := b.srv.fleet.cfg.Catalog.Get(context.Background(), sb.SandboxID); err != nil || found {
			t.Errorf("round %d: the fleet's catalog still holds the killed sandbox (%v)", round, err)
		}
	}
}
