package sandboxserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// fakeBoxes is the box backend at the network edge of the unit tests: an
// in-memory file tree per task, no commands.
type fakeBoxes struct {
	mu      sync.Mutex
	files   map[string]map[string][]byte
	stopped []string
	removed []string
	// discardWrites: WriteFileFrom reads the data and keeps its size only
	// (benchmarks of the path to the box, not of the fake).
	discardWrites bool
	// beforeOpen, when set, runs at the start of every Open, outside the
	// lock (a test holds a box start there).
	beforeOpen func(task string)
}

func newFakeBoxes() *fakeBoxes { return &fakeBoxes{files: map[string]map[string][]byte{}} }

func (f *fakeBoxes) Open(_ context.Context, task string) (backend.Environment, error) {
	if f.beforeOpen != nil {
		f.beforeOpen(task)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.files[task] == nil {
		f.files[task] = map[string][]byte{}
	}
	return &fakeEnv{f: f, task: task}, nil
}

func (f *fakeBoxes) Stop(task string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = append(f.stopped, task)
	return nil
}

func (f *fakeBoxes) Remove(task string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, task)
	delete(f.files, task)
	return nil
}

func (f *fakeBoxes) HasLayer(task string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files[task] != nil
}

func (f *fakeBoxes) wasRemoved(task string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.removed, task)
}

type fakeEnv struct {
	f    *fakeBoxes
	task string
}

var errNoCommands = errors.New("the fake box runs no commands")

func (e *fakeEnv) Workdir() string { return UserHome }
func (e *fakeEnv) Exec(context.Context, backend.ExecRequest) (backend.ExecResult, error) {
	return backend.ExecResult{}, errNoCommands
}
func (e *fakeEnv) Start(context.Context, backend.ExecRequest) (backend.Process, error) {
	return nil, errNoCommands
}
func (e *fakeEnv) Close() error { return nil }

func (e *fakeEnv) ReadFile(_ context.Context, p string) ([]byte, error) {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	data, ok := e.f.files[e.task][p]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	return data, nil
}

func (e *fakeEnv) WriteFile(_ context.Context, p string, data []byte, _ fs.FileMode) error {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	if e.f.files[e.task] == nil { // removed while a write was under way
		return &fs.PathError{Op: "write", Path: p, Err: fs.ErrNotExist}
	}
	e.f.files[e.task][p] = data
	return nil
}

// ReadFileTo and WriteFileFrom make the fake a fileStreamer (a box
// streams through commands, which the fake does not run).
func (e *fakeEnv) ReadFileTo(ctx context.Context, p string, w io.Writer) error {
	data, err := e.ReadFile(ctx, p)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func (e *fakeEnv) WriteFileFrom(ctx context.Context, p string, r io.Reader, perm fs.FileMode) error {
	if e.f.discardWrites {
		n, err := io.Copy(io.Discard, r)
		if err != nil {
			return err
		}
		return e.WriteFile(ctx, p, []byte(strconv.FormatInt(n, 10)), perm)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return e.WriteFile(ctx, p, data, perm)
}

func (e *fakeEnv) Stat(_ context.Context, p string) (backend.FileInfo, error) {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	if data, ok := e.f.files[e.task][p]; ok {
		return backend.FileInfo{Name: path.Base(p), Size: int64(len(data)), Mode: 0o644}, nil
	}
	return backend.FileInfo{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
}

func (e *fakeEnv) ReadDir(context.Context, string) ([]backend.FileInfo, error) { return nil, nil }

const testKey = "key-for-tests"

func newTestServer(t *testing.T) (*Server, *fakeBoxes, *httptest.Server, *httptest.Server) {
	t.Helper()
	boxes := newFakeBoxes()
	srv, err := New(Config{Boxes: boxes, APIKeys: []string{testKey}, Templates: map[string]Template{"base": {}, "hermes": {}}})
	if err != nil {
		t.Fatal(err)
	}
	api, envd := httptest.NewServer(srv.APIHandler()), httptest.NewServer(srv.EnvdHandler())
	t.Cleanup(func() { api.Close(); envd.Close(); srv.Close() })
	return srv, boxes, api, envd
}

// call sends a request with headers and returns the status and body.
func call(t *testing.T, method, url string, body io.Reader, headers ...string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json") // as the SDKs send; headers may say otherwise
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header
}

func createSandbox(t *testing.T, api string, body string) sandboxJSON {
	t.Helper()
	code, data, _ := call(t, "POST", api+"/v2/sandboxes", strings.NewReader(body), "X-API-Key", testKey)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, data)
	}
	var sb sandboxJSON
	if err := json.Unmarshal(data, &sb); err != nil {
		t.Fatal(err)
	}
	return sb
}

func TestAPIKeyRequired(t *testing.T) {
	_, _, api, _ := newTestServer(t)
	for _, key := range []string{"", "wrong", testKey + "x"} {
		code, data, _ := call(t, "GET", api.URL+"/v2/sandboxes", nil, "X-API-Key", key)
		var e apiError
		if code != http.StatusUnauthorized || json.Unmarshal(data, &e) != nil || e.Code != 401 || e.Message == "" {
			t.Errorf("key %q: %d %s, want 401 {code, message}", key, code, data)
		}
	}
	if code, _, _ := call(t, "GET", api.URL+"/v2/sandboxes", nil, "X-API-Key", testKey); code != http.StatusOK {
		t.Errorf("right key: %d", code)
	}
}

// TestUnservedRouteIsAnE2BError: `e2b sbx metrics` and `e2b sbx logs`
// ask routes hermes does not serve; the CLI must print a message naming
// the route, from E2B's {code, message} error shape, not "404 page not
// found" or "unknown error: no message".
func TestUnservedRouteIsAnE2BError(t *testing.T) {
	_, _, api, _ := newTestServer(t)
	for _, path := range []string{"/sandboxes/abc/metrics", "/v2/sandboxes/abc/logs"} {
		code, data, _ := call(t, "GET", api.URL+path, nil, "X-API-Key", testKey)
		var e apiError
		if code != http.StatusNotFound || json.Unmarshal(data, &e) != nil || e.Code != 404 || !strings.Contains(e.Message, path) {
			t.Errorf("GET %s: %d %s, want 404 {code, message} naming the route", path, code, data)
		}
	}
	if code, _, _ := call(t, "GET", api.URL+"/sandboxes/abc/metrics", nil); code != http.StatusUnauthorized {
		t.Errorf("unserved route without a key: %d, want 401", code)
	}
}

func TestSandboxLifecycle(t *testing.T) {
	_, boxes, api, _ := newTestServer(t)
	auth := []string{"X-API-Key", testKey}
	if code, data, _ := call(t, "POST", api.URL+"/sandboxes", strings.NewReader(`{"templateID":"nope"}`), auth...); code != 404 || !strings.Contains(string(data), `"code":404`) {
		t.Fatalf("unknown template: %d %s", code, data)
	}
	sb := createSandbox(t, api.URL, `{"templateID":"hermes","timeout":300,"metadata":{"app":"x"}}`)
	if sb.EnvdVersion != EnvdVersion || sb.EnvdAccessToken == "" || sb.TemplateID != "hermes" {
		t.Fatalf("create answered %+v", sb)
	}
	state := func(filter string) []string {
		_, data, _ := call(t, "GET", api.URL+"/v2/sandboxes?state="+filter, nil, auth...)
		var list []sandboxDetailJSON
		json.Unmarshal(data, &list)
		var ids []string
		for _, d := range list {
			ids = append(ids, d.SandboxID)
		}
		return ids
	}
	if got := state("running"); !slices.Equal(got, []string{sb.SandboxID}) {
		t.Fatalf("running: %v", got)
	}
	if code, _, _ := call(t, "POST", api.URL+"/sandboxes/"+sb.SandboxID+"/pause", nil, auth...); code != 204 {
		t.Fatalf("pause: %d", code)
	}
	if code, _, _ := call(t, "POST", api.URL+"/sandboxes/"+sb.SandboxID+"/pause", nil, auth...); code != 409 {
		t.Fatalf("second pause: %d, want 409", code)
	}
	if got := state("paused"); !slices.Equal(got, []string{sb.SandboxID}) {
		t.Fatalf("paused: %v", got)
	}
	if code, _, _ := call(t, "POST", api.URL+"/v2/sandboxes/"+sb.SandboxID+"/connect", strings.NewReader(`{"timeout":60}`), auth...); code != 201 {
		t.Fatalf("connect to paused: %d, want 201", code)
	}
	if code, _, _ := call(t, "POST", api.URL+"/sandboxes/"+sb.SandboxID+"/connect", strings.NewReader(`{"timeout":60}`), auth...); code != 200 {
		t.Fatalf("connect to running: %d, want 200", code)
	}
	if code, _, _ := call(t, "DELETE", api.URL+"/sandboxes/"+sb.SandboxID, nil, auth...); code != 204 {
		t.Fatalf("kill: %d", code)
	}
	if code, _, _ := call(t, "GET", api.URL+"/sandboxes/"+sb.SandboxID, nil, auth...); code != 404 {
		t.Fatalf("get after kill: %d", code)
	}
	if !boxes.wasRemoved(Task(sb.SandboxID)) || !slices.Contains(boxes.stopped, Task(sb.SandboxID)) {
		t.Fatalf("box not stopped on pause / removed on kill: %+v", boxes)
	}
}

func TestListPaging(t *testing.T) {
	_, _, api, _ := newTestServer(t)
	var made []string
	for range 3 {
		made = append(made, createSandbox(t, api.URL, `{"templateID":"base","timeout":300}`).SandboxID)
	}
	var seen []string
	next := ""
	for pages := 0; pages < 5; pages++ {
		code, data, h := call(t, "GET", api.URL+"/v2/sandboxes?limit=2&nextToken="+next, nil, "X-API-Key", testKey)
		if code != 200 {
			t.Fatalf("list: %d %s", code, data)
		}
		var list []sandboxDetailJSON
		json.Unmarshal(data, &list)
		for _, d := range list {
			seen = append(seen, d.SandboxID)
		}
		if next = h.Get("X-Next-Token"); next == "" {
			break
		}
	}
	slices.Sort(seen)
	slices.Sort(made)
	if !slices.Equal(seen, made) {
		t.Fatalf("pages listed %v, want %v once each", seen, made)
	}
	if code, _, _ := call(t, "GET", api.URL+"/v2/sandboxes?state=sleeping", nil, "X-API-Key", testKey); code != 400 {
		t.Fatalf("bad state filter: %d, want 400", code)
	}
}

// waitFor polls cond (an event, not a duration under test).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitfor.Until(t, what, cond)
}

func TestTimeoutKillsOrPauses(t *testing.T) {
	srv, boxes, api, _ := newTestServer(t)
	killed := createSandbox(t, api.URL, `{"templateID":"base","timeout":0}`)
	waitFor(t, "the expired sandbox's kill", func() bool { return boxes.wasRemoved(Task(killed.SandboxID)) })
	if srv.lookup(killed.SandboxID) != nil {
		t.Fatal("an expired sandbox is still listed")
	}
	paused := createSandbox(t, api.URL, `{"templateID":"base","timeout":0,"autoPause":true}`)
	sb := srv.lookup(paused.SandboxID)
	waitFor(t, "the expired sandbox's pause", func() bool { return sb.currentState() == "paused" })
	if boxes.wasRemoved(Task(paused.SandboxID)) {
		t.Fatal("autoPause sandbox was removed")
	}
}

func TestEnvdAuthAndFiles(t *testing.T) {
	_, _, api, envd := newTestServer(t)
	sb := createSandbox(t, api.URL, `{"templateID":"base","timeout":300}`)
	hdr := []string{"E2b-Sandbox-Id", sb.SandboxID, "X-Access-Token", sb.EnvdAccessToken}
	if code, _, _ := call(t, "GET", envd.URL+"/files?path=x", nil, "E2b-Sandbox-Id", sb.SandboxID, "X-Access-Token", "wrong"); code != 502 {
		t.Fatalf("wrong token: %d, want 502, as for a sandbox that does not exist", code)
	}
	if code, _, _ := call(t, "GET", envd.URL+"/files?path=x", nil, "E2b-Sandbox-Id", "nosuch", "X-Access-Token", sb.EnvdAccessToken); code != 502 {
		t.Fatalf("unknown sandbox: %d, want 502", code)
	}
	if code, _, _ := call(t, "GET", envd.URL+"/health", nil, hdr...); code != 204 {
		t.Fatalf("health: %d, want 204", code)
	}
	// Without its token (another tenant probing ids) a running sandbox's
	// health answers as a made-up id's does.
	if code, _, _ := call(t, "GET", envd.URL+"/health", nil, "E2b-Sandbox-Id", sb.SandboxID); code != 502 {
		t.Fatalf("health of an existing sandbox without its token: %d, want 502 as for an unknown id", code)
	}
	if code, _, _ := call(t, "GET", envd.URL+"/health", nil, "E2b-Sandbox-Id", sb.SandboxID, "X-Access-Token", "wrong"); code != 502 {
		t.Fatalf("health with a wrong token: %d, want 502", code)
	}
	// deploy/kubernetes's readiness probe asks envd's /health with no
	// sandbox id: the server is up, so the pod must become ready.
	if code, _, _ := call(t, "GET", envd.URL+"/health", nil); code != 204 {
		t.Fatalf("health without E2b-Sandbox-Id (the readiness probe): %d, want 204", code)
	}
	if code, _, _ := call(t, "GET", envd.URL+"/health", nil, "E2b-Sandbox-Id", "nosuch"); code != 502 {
		t.Fatalf("health of an unknown sandbox: %d, want 502", code)
	}
	// octet-stream, gzip-encoded, relative path (from the user's home)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("zipped"))
	zw.Close()
	code, data, _ := call(t, "POST", envd.URL+"/files?path=notes/a.txt", &gz, append(hdr, "Content-Type", "application/octet-stream", "Content-Encoding", "gzip")...)
	if code != 200 || !strings.Contains(string(data), `"path":"/home/user/notes/a.txt"`) {
		t.Fatalf("octet-stream upload: %d %s", code, data)
	}
	// multipart with full paths as file names
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	for _, p := range []string{"/home/user/x/one.txt", "/tmp/two.txt"} {
		w, _ := mw.CreateFormFile("file", p)
		fmt.Fprintf(w, "content of %s", p)
	}
	mw.Close()
	code, data, _ = call(t, "POST", envd.URL+"/files", &mp, append(hdr, "Content-Type", mw.FormDataContentType())...)
	if code != 200 || !strings.Contains(string(data), "/tmp/two.txt") {
		t.Fatalf("multipart upload: %d %s", code, data)
	}
	code, data, _ = call(t, "GET", envd.URL+"/files?path=/home/user/notes/a.txt", nil, hdr...)
	if code != 200 || string(data) != "zipped" {
		t.Fatalf("read back: %d %q", code, data)
	}
	code, data, _ = call(t, "GET", envd.URL+"/files?path=/tmp/two.txt", nil, hdr...)
	if code != 200 || string(data) != "content of /tmp/two.txt" {
		t.Fatalf("read multipart file: %d %q", code, data)
	}
	if code, data, _ = call(t, "GET", envd.URL+"/files?path=/missing", nil, hdr...); code != 404 || !strings.Contains(string(data), `"code":404`) ||
		strings.Count(string(data), "/missing") != 1 {
		t.Fatalf("missing file: %d %s (want 404 naming the path once)", code, data)
	}
	call(t, "POST", api.URL+"/sandboxes/"+sb.SandboxID+"/pause", nil, "X-API-Key", testKey)
	if code, _, _ := call(t, "GET", envd.URL+"/health", nil, hdr...); code != 502 {
		t.Fatalf("health of a paused sandbox: %d, want 502", code)
	}
}

func TestEgressRules(t *testing.T) {
	no, yes := false, true
	cases := []struct {
		internet    *bool
		net         *networkConfig
		allow, deny []string
	}{
		{nil, nil, []string{"*", "0.0.0.0/0", "::/0"}, nil},
		{&yes, &networkConfig{DenyOut: []string{"10.0.0.0/8"}}, []string{"*", "0.0.0.0/0", "::/0"}, []string{"10.0.0.0/8"}},
		{&no, &networkConfig{AllowOut: []string{"api.example.com"}}, []string{"api.example.com"}, nil},
		// E2B's "deny everything but": allowOut wins there, so deny-all
		// becomes "no internet" here (the gate lets deny win).
		{nil, &networkConfig{AllowOut: []string{"8.8.8.8"}, DenyOut: []string{"0.0.0.0/0"}}, []string{"8.8.8.8"}, nil},
	}
	for i, c := range cases {
		allow, deny, _ := egressRules(c.internet, c.net)
		if !slices.Equal(allow, c.allow) || !slices.Equal(deny, c.deny) {
			t.Errorf("case %d: allow %v deny %v, want %v %v", i, allow, deny, c.allow, c.deny)
		}
	}
}

func TestBadNetworkRuleIsABadRequest(t *testing.T) {
	_, _, api, _ := newTestServer(t)
	body := `{"templateID":"base","network":{"allowOut":["http://example.com/path"]}}`
	code, data, _ := call(t, "POST", api.URL+"/v2/sandboxes", strings.NewReader(body), "X-API-Key", testKey)
	if code != http.StatusBadRequest || !strings.Contains(string(data), "http://example.com/path") {
		t.Fatalf("bad allowOut entry: %d %s, want 400 naming the entry", code, data)
	}
}

// A sandbox's allowOut may not open the host's loopback, private or
// link-local (metadata) ranges, nor the host's own addresses: with
// "127.0.0.1" a box reached every service on the server's loopback.
func TestAllowOutCannotOpenTheHost(t *testing.T) {
	boxes := newFakeBoxes()
	srv, err := New(Config{Boxes: boxes, APIKeys: []string{testKey}, InterfaceAddrs: func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("203.0.113.7"), Mask: net.CIDRMask(24, 32)}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv.APIHandler())
	t.Cleanup(func() { api.Close(); srv.Close() })
	for _, e := range []string{"127.0.0.1", "127.0.0.0/8", "::1", "[::1]:3000", "169.254.169.254", "10.1.0.0/16", "192.168.1.1:22",
		"fd00::/8", "::ffff:127.0.0.1", "203.0.113.7", "0.0.0.0"} {
		body := fmt.Sprintf(`{"templateID":"base","network":{"allowOut":[%q]}}`, e)
		code, data, _ := call(t, "POST", api.URL+"/v2/sandboxes", strings.NewReader(body), "X-API-Key", testKey)
		if code != http.StatusForbidden || !strings.Contains(string(data), "--allow") {
			t.Errorf("allowOut %s: %d %s, want 403", e, code, data)
		}
	}
	for _, e := range []string{"8.8.8.8", "0.0.0.0/0", "*", "api.example.com", "localhost", "203.0.113.0/24"} {
		createSandbox(t, api.URL, fmt.Sprintf(`{"templateID":"base","network":{"allowOut":[%q]}}`, e))
	}
}

// Creating sandboxes without end made a box each (thousands of boxes
// took the machine down); past MaxSandboxes a create is refused with 429
// until one is killed.
func TestSandboxLimit(t *testing.T) {
	srv, err := New(Config{Boxes: newFakeBoxes(), APIKeys: []string{testKey}, MaxSandboxes: 2})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv.APIHandler())
	t.Cleanup(func() { api.Close(); srv.Close() })
	first := createSandbox(t, api.URL, `{"templateID":"base","timeout":300}`)
	createSandbox(t, api.URL, `{"templateID":"base","timeout":300}`)
	code, data, _ := call(t, "POST", api.URL+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`), "X-API-Key", testKey)
	if code != http.StatusTooManyRequests || !strings.Contains(string(data), "--max-sandboxes") {
		t.Fatalf("third sandbox: %d %s, want 429", code, data)
	}
	call(t, "DELETE", api.URL+"/sandboxes/"+first.SandboxID, nil, "X-API-Key", testKey)
	createSandbox(t, api.URL, `{"templateID":"base","timeout":300}`)
}

// A timeout in seconds too big for a time.Duration wrapped around to a
// short one and killed the sandbox at once; it is MaxTimeout instead.
func TestHugeTimeoutIsTheMaximum(t *testing.T) {
	srv, _, api, _ := newTestServer(t)
	sb := createSandbox(t, api.URL, `{"templateID":"base","timeout":18446744074}`)
	d := srv.detailJSON(srv.lookup(sb.SandboxID), false)
	if left := d.EndAt.Sub(d.StartedAt); left < 23*time.Hour {
		t.Fatalf("endAt is %v after start, want the 24 h maximum", left)
	}
}

// Each gzip part of a multipart upload decoded to MaxUploadBytes on its
// own: a small request wrote hundreds of times the bound. The bound is
// on the whole request.
func TestUploadBoundIsPerRequest(t *testing.T) {
	srv, err := New(Config{Boxes: newFakeBoxes(), APIKeys: []string{testKey}, MaxUploadBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	api, envd := httptest.NewServer(srv.APIHandler()), httptest.NewServer(srv.EnvdHandler())
	t.Cleanup(func() { api.Close(); envd.Close(); srv.Close() })
	sb := createSandbox(t, api.URL, `{"templateID":"base","timeout":300}`)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	for i := range 8 {
		h := map[string][]string{"Content-Disposition": {fmt.Sprintf(`form-data; name="file"; filename="/tmp/bomb%d"`, i)},
			"Content-Encoding": {"gzip"}}
		w, _ := mw.CreatePart(h)
		w.Write(gz.Bytes())
	}
	mw.Close()
	code, data, _ := call(t, "POST", envd.URL+"/files", &mp, "E2b-Sandbox-Id", sb.SandboxID, "X-Access-Token", sb.EnvdAccessToken,
		"Content-Type", mw.FormDataContentType())
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("8 parts of 1 MiB each under a 1 MiB bound: %d %s, want 413", code, data)
	}
}

// A download is not bounded by MaxUploadBytes nor by the transfer
// budget: it streams whole through one budget buffer, gzipped or not.
func TestDownloadStreamsPastTheBudget(t *testing.T) {
	boxes := newFakeBoxes()
	srv, err := New(Config{Boxes: boxes, APIKeys: []string{testKey}, MaxUploadBytes: 1 << 10, MaxTransferBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	api, envd := httptest.NewServer(srv.APIHandler()), httptest.NewServer(srv.EnvdHandler())
	t.Cleanup(func() { api.Close(); envd.Close(); srv.Close() })
	sb := createSandbox(t, api.URL, `{"templateID":"base","timeout":300}`)
	env, _ := boxes.Open(context.Background(), Task(sb.SandboxID))
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*transferChunk/16+5)
	env.WriteFile(context.Background(), "/big", big, 0o644)
	hdr := []string{"E2b-Sandbox-Id", sb.SandboxID, "X-Access-Token", sb.EnvdAccessToken}
	var wg sync.WaitGroup
	for _, enc := range []string{"identity", "gzip"} {
		wg.Add(1)
		go func() { // two at once on a budget of one buffer: one waits
			defer wg.Done()
			req, _ := http.NewRequest("GET", envd.URL+"/files?path=/big", nil)
			for i := 0; i < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			req.Header.Set("Accept-Encoding", enc)
			resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var body io.Reader = resp.Body
			if resp.Header.Get("Content-Encoding") == "gzip" {
				if body, err = gzip.NewReader(resp.Body); err != nil {
					t.Error(err)
					return
				}
			}
			got, err := io.ReadAll(body)
			if resp.StatusCode != 200 || err != nil || !bytes.Equal(got, big) {
				t.Errorf("%s download: %d, %d bytes (%v), want %d", enc, resp.StatusCode, len(got), err, len(big))
			}
		}()
	}
	wg.Wait()
	if code, _, _ := call(t, "GET", envd.URL+"/files?path=/nosuch", nil, hdr...); code != http.StatusNotFound {
		t.Fatalf("missing file: %d, want 404", code)
	}
}

// Issue 23: E2B's allowInternetAccess: false means no egress but the
// client's own network.allowOut. The operator's --allow entries (here the
// host's loopback service 127.0.0.1:8080) were opened for every sandbox,
// that one too; now they reach only sandboxes with internet access, and
// they widen what a client's allowOut may name.
func TestNoInternetSandboxGetsOnlyItsAllowOut(t *testing.T) {
	var gates [][2][]string
	srv, err := New(Config{Boxes: newFakeBoxes(), APIKeys: []string{testKey}, Templates: map[string]Template{"base": {}},
		Allow: []string{"127.0.0.1:8080", "10.0.0.0/8"}, Deny: []string{"blocked.example"},
		NewGate: func(allow, deny []string) (*egress.Gate, error) {
			gates = append(gates, [2][]string{allow, deny})
			return nil, errors.New("no gate in this test")
		}})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(srv.APIHandler())
	t.Cleanup(func() { api.Close(); srv.Close() })
	rules := func(body string) (allow, deny []string) {
		t.Helper()
		sb := createSandbox(t, api.URL, body)
		gates = nil
		_, _ = srv.NewEgress(Task(sb.SandboxID))
		if len(gates) != 1 {
			t.Fatalf("%s: NewGate called %d times", body, len(gates))
		}
		return gates[0][0], gates[0][1]
	}
	allow, deny := rules(`{"templateID":"base","allow_internet_access":false}`)
	if len(allow) != 0 || !slices.Contains(deny, "blocked.example") {
		t.Errorf("no internet: allow %v deny %v, want nothing allowed and the operator's deny kept", allow, deny)
	}
	allow, _ = rules(`{"templateID":"base","allow_internet_access":false,"network":{"allowOut":["api.example.com","10.1.2.3"]}}`)
	if !slices.Equal(allow, []string{"api.example.com", "10.1.2.3"}) {
		t.Errorf("no internet with allowOut: allow %v, want only the allowOut entries", allow)
	}
	allow, _ = rules(`{"templateID":"base"}`)
	if !slices.Contains(allow, "127.0.0.1:8080") || !slices.Contains(allow, "*") {
		t.Errorf("internet: allow %v, want the operator's entries and the internet", allow)
	}
	// The operator's list widens allowOut; what it does not cover stays refused.
	createSandbox(t, api.URL, `{"templateID":"base","allow_internet_access":false,"network":{"allowOut":["127.0.0.1:8080"]}}`)
	for _, e := range []string{"127.0.0.1", "127.0.0.1:22", "192.168.1.1"} {
		body := fmt.Sprintf(`{"templateID":"base","network":{"allowOut":[%q]}}`, e)
		if code, data, _ := call(t, "POST", api.URL+"/v2/sandboxes", strings.NewReader(body), "X-API-Key", testKey); code != http.StatusForbidden {
			t.Errorf("allowOut %s outside the operator's list: %d %s, want 403", e, code, data)
		}
	}
}
