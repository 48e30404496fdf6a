package sandboxserver

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

// cuttableLink relays connections to a PostgreSQL server until cut: then
// it closes its listener and every open connection, as a database outage
// looks to its clients (connections reset, new ones refused).
type cuttableLink struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// linkTo returns the URL of dbURL's server reached through a new link (a
// Unix socket for a Unix-socket URL, else loopback TCP).
func linkTo(t *testing.T, dbURL string) (string, *cuttableLink) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	var network, target string
	l := &cuttableLink{}
	if strings.HasPrefix(cfg.Host, "/") {
		network, target = "unix", filepath.Join(cfg.Host, ".s.PGSQL."+strconv.Itoa(int(cfg.Port)))
		dir := t.TempDir()
		l.ln, err = net.Listen("unix", filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(int(cfg.Port))))
		u.Host = ""
		q.Set("host", dir)
		q.Set("port", strconv.Itoa(int(cfg.Port)))
	} else {
		network, target = "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
		l.ln, err = net.Listen("tcp", "127.0.0.1:0")
		u.Host = l.ln.Addr().String()
		q.Del("host")
		q.Del("port")
	}
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = q.Encode()
	go func() {
		for {
			c, err := l.ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial(network, target)
			if err != nil {
				c.Close()
				continue
			}
			l.mu.Lock()
			l.conns = append(l.conns, c, up)
			l.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(l.cut)
	return u.String(), l
}

// cut ends the link: the database is unreachable from then on.
func (l *cuttableLink) cut() {
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// A database outage (issue 29): envd and API requests for another node's
// sandbox keep routing from the owner cache while its entry is fresh
// (seen within OwnerCacheFor, 10 min); creates, and sandboxes not seen,
// get 503 in E2B's shape saying the catalog cannot be reached; a node's
// own sandboxes keep working; past the bound the cache is not used.
func TestFleetCatalogOutage(t *testing.T) {
	dbURL, schema := postgrestest.Schema(t)
	linked, link := linkTo(t, dbURL)
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	nodes := newTestFleetAt(t, clock, linked, schema)
	a, b := nodes["a"], nodes["b"]
	onA := createSandbox(t, a.api.URL, `{"templateID":"base"}`)
	onB := createSandbox(t, a.api.URL, `{"templateID":"base"}`)
	unseen := createSandbox(t, b.api.URL, `{"templateID":"base"}`)
	if a.srv.lookup(onA.SandboxID) == nil || b.srv.lookup(onB.SandboxID) == nil || b.srv.lookup(unseen.SandboxID) == nil {
		t.Fatal("placement: want the first on a, the next two on b")
	}
	read := func(via *testNode, sb sandboxJSON) (int, string) {
		req, _ := http.NewRequest("GET", via.envd.URL+"/files?path=/home/user/.hermes/.sandbox", nil)
		req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
		req.Header.Set("E2b-Sandbox-Id", sb.SandboxID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, strings.TrimSpace(string(data))
	}
	for _, c := range []struct {
		via *testNode
		sb  sandboxJSON
	}{{a, onB}, {b, onA}} {
		if code, body := read(c.via, c.sb); code != 200 || body != c.sb.SandboxID {
			t.Fatalf("envd before the outage: %d %q", code, body)
		}
	}

	link.cut()
	clock.Set(clock.Now().Add(9 * time.Minute)) // within the 10 min bound
	for _, c := range []struct {
		via *testNode
		sb  sandboxJSON
	}{{a, onB}, {b, onA}, {a, onA}} {
		if code, body := read(c.via, c.sb); code != 200 || body != c.sb.SandboxID {
			t.Errorf("envd for %s during the outage: %d %q, want it routed from the owner cache", c.sb.SandboxID, code, body)
		}
	}
	if code, data, _ := call(t, "GET", a.api.URL+"/sandboxes/"+onB.SandboxID, nil, "X-API-Key", testKey); code != 200 {
		t.Errorf("get through a during the outage: %d %s", code, data)
	}
	if code, data, _ := call(t, "GET", a.api.URL+"/sandboxes/"+onB.SandboxID, nil, "X-API-Key", "other-key-for-tests"); code != 404 {
		t.Errorf("another tenant's get during the outage: %d %s, want 404", code, data)
	}
	wantCatalogDown := func(what string, code int, data []byte) {
		t.Helper()
		var e apiError
		if err := json.Unmarshal(data, &e); err != nil || code != 503 || e.Code != 503 || !strings.Contains(e.Message, "catalog cannot be reached") {
			t.Errorf("%s during the outage: %d %s, want 503 {code, message} naming the catalog", what, code, data)
		}
	}
	code, data, _ := call(t, "POST", a.api.URL+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`), "X-API-Key", testKey)
	wantCatalogDown("a create", code, data)
	code, body := read(a, unseen)
	wantCatalogDown("envd for a sandbox a never routed", code, []byte(body))

	clock.Set(clock.Now().Add(2 * time.Minute)) // 11 min since the catalog said so
	code, body = read(a, onB)
	wantCatalogDown("envd past the cache's bound", code, []byte(body))
	if code, body := read(b, onB); code != 200 || body != onB.SandboxID {
		t.Errorf("envd on the owning node during the outage: %d %q", code, body)
	}
}
