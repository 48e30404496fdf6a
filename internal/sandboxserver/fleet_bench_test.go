package sandboxserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkFleetRouting measures what routing through a node that does
// not own the sandbox costs (issue 29's target: ≤ 2 ms p50 over a direct
// call), on two in-process nodes (fake boxes, real PostgreSQL catalog,
// real HTTP on loopback): node a holds one sandbox and has room for no
// more, so creates through a are placed on b and every call is proxied.
//   - cycle: create → envd GET /files → kill, through a vs at b;
//   - envd: one envd GET /files of a running sandbox, through a vs at b;
//   - upload100MB: an envd POST /files of 100 MB, through a vs at b (the
//     fake box reads and drops it), as MB/s.
//
// Each reports p50 and p99 in ms besides ns/op.
//
//	go test ./internal/sandboxserver -run '^$' -bench 'FleetRouting/(cycle|envd)' -benchtime 200x
//	go test ./internal/sandboxserver -run '^$' -bench 'FleetRouting/upload' -benchtime 5x
func BenchmarkFleetRouting(b *testing.B) {
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	nodes := newTestFleet(b, clock)
	na, nb := nodes["a"], nodes["b"]
	na.srv.fleet.cfg.Self.MaxSandboxes = 1
	if err := na.srv.fleet.cfg.Catalog.Register(b.Context(), na.srv.fleet.cfg.Self, clock.Now()); err != nil {
		b.Fatal(err)
	}
	benchCreate(b, na.api.URL) // fills a
	na.srv.cfg.Boxes.(*fakeBoxes).discardWrites = true
	nb.srv.cfg.Boxes.(*fakeBoxes).discardWrites = true
	for _, via := range []struct {
		name      string
		api, envd string
	}{{"routed", na.api.URL, na.envd.URL}, {"direct", nb.api.URL, nb.envd.URL}} {
		b.Run("cycle/"+via.name, func(b *testing.B) {
			timed(b, func() {
				sb := benchCreate(b, via.api)
				benchEnvd(b, "GET", via.envd, sb, nil)
				benchDo(b, "DELETE", via.api+"/sandboxes/"+sb.SandboxID, nil, 204, "X-API-Key", testKey)
			})
		})
		b.Run("envd/"+via.name, func(b *testing.B) {
			sb := benchCreate(b, via.api)
			b.Cleanup(func() { benchDo(b, "DELETE", via.api+"/sandboxes/"+sb.SandboxID, nil, 204, "X-API-Key", testKey) })
			timed(b, func() { benchEnvd(b, "GET", via.envd, sb, nil) })
		})
		b.Run("upload100MB/"+via.name, func(b *testing.B) {
			sb := benchCreate(b, via.api)
			b.Cleanup(func() { benchDo(b, "DELETE", via.api+"/sandboxes/"+sb.SandboxID, nil, 204, "X-API-Key", testKey) })
			data := bytes.Repeat([]byte("0123456789abcdef"), 100<<20/16)
			b.SetBytes(int64(len(data)))
			timed(b, func() { benchEnvd(b, "POST", via.envd, sb, data) })
		})
	}
}

// timed runs op b.N times and reports its p50 and p99 (ms).
func timed(b *testing.B, op func()) {
	took := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		op()
		took = append(took, time.Since(t0))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	ms := func(p float64) float64 {
		return float64(took[min(len(took)-1, int(p*float64(len(took))))].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

func benchCreate(b *testing.B, api string) sandboxJSON {
	data := benchDo(b, "POST", api+"/v2/sandboxes", strings.NewReader(`{"templateID":"base","timeout":3600}`), 201, "X-API-Key", testKey, "Content-Type", "application/json")
	var sb sandboxJSON
	if err := json.Unmarshal(data, &sb); err != nil {
		b.Fatal(err)
	}
	return sb
}

// benchEnvd reads a small file of sb (GET) or uploads data (POST) at envd.
func benchEnvd(b *testing.B, method, envd string, sb sandboxJSON, data []byte) {
	path := "/files?path=/home/user/.hermes/.sandbox"
	var body io.Reader
	if method == "POST" {
		path, body = "/files?path=/home/user/upload.bin", bytes.NewReader(data)
	}
	benchDo(b, method, envd+path, body, 200, "X-Access-Token", sb.EnvdAccessToken, "E2b-Sandbox-Id", sb.SandboxID,
		"Content-Type", "application/octet-stream")
}

func benchDo(b *testing.B, method, url string, body io.Reader, want int, headers ...string) []byte {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, data)
	}
	return data
}
