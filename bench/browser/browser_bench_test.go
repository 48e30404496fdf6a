// Package browser_test benchmarks the browser tools' Chromium: the first
// browser_navigate of a session (Chromium start + page load) and a warm
// navigate + snapshot, on the host and inside a box (terminal.backend:
// box, Chromium in the box's cgroup, traffic through the egress gate). It
// reports the peak resident memory of the browser's processes (sum of
// VmHWM over the Chromium processes of the run).
//
// Run: go test ./bench/browser -run '^$' -bench . -benchtime 10x
// The box rows need root and box kernel features; they are skipped
// otherwise. Plain `go test` runs no benchmark.
package browser_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/box/initproc"
	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/browser"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/egress"
)

// TestMain lets the test binary act as the box init.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == wire.InitArg {
		os.Exit(initproc.InitMain())
	}
	os.Exit(m.Run())
}

// page is a small page with a JS-rendered list, like the tests' site.
const page = `<!doctype html><title>Bench</title><h1>Bench page</h1><nav><a href="/a">A</a> <a href="/b">B</a></nav>
<form><input name="q" aria-label="Query"><button>Go</button></form><ul id="l"></ul>
<script>for (let i = 0; i < 50; i++) { const li = document.createElement("li"); li.textContent = "item " + i; document.getElementById("l").appendChild(li); }</script>`

func site(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, page) }))
	b.Cleanup(srv.Close)
	return srv
}

// peakRSS sums VmHWM (kB, each process's peak resident set; shared pages
// counted once per process, so an upper bound) and Pss (kB, proportional
// share now) over the processes whose command line holds marker.
func peakRSS(marker string) (hwm, pss int64) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !strings.Contains(string(cmd), marker) {
			continue
		}
		hwm += field(filepath.Join("/proc", e.Name(), "status"), "VmHWM:")
		pss += field(filepath.Join("/proc", e.Name(), "smaps_rollup"), "Pss:")
	}
	return hwm, pss
}

// field reads the kB value of the line starting with key.
func field(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

type env struct {
	opts   browser.Options
	url    string
	marker string // in the command line of the run's Chromium processes
}

func hostEnv(b *testing.B) env {
	if browser.FindChromium() == "" {
		b.Skip("no Chromium on PATH (apt-get install chromium)")
	}
	dir := b.TempDir()
	return env{opts: browser.Options{TempDir: dir}, url: site(b).URL + "/", marker: dir + "/hermes-browser-"}
}

// boxEnv runs Chromium in a box whose gate allows the site, reached by
// the host's name (which must resolve to loopback, as in the box test).
func boxEnv(b *testing.B) env {
	if os.Geteuid() != 0 {
		b.Skip("box rows need root")
	}
	if err := box.Preflight(); err != nil {
		b.Skip(err)
	}
	if browser.FindChromium() == "" {
		b.Skip("no Chromium on the host for the box's host image")
	}
	name, _ := os.Hostname()
	exe, _ := os.Executable()
	home, ws := b.TempDir(), b.TempDir()
	gate, err := egress.New(egress.Options{Home: home, Allow: []string{name, "127.0.0.1/32"}, BoxMemoryMiB: 2048})
	if err != nil {
		b.Fatal(err)
	}
	m, err := box.NewManager(box.Options{Home: home, Executable: exe, NewEgress: gate.NewBox,
		Terminal: config.TerminalConfig{Backend: "box", Cwd: ws, ContainerMemory: 2048, ContainerDisk: 512}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	srv := site(b)
	port := srv.Listener.Addr().String()[strings.LastIndex(srv.Listener.Addr().String(), ":")+1:]
	return env{opts: browser.Options{Launch: browser.EnvLaunch(m.Open, browser.BoxChromium)},
		url: "http://" + name + ":" + port + "/", marker: "/tmp/hermes-browser-"}
}

// benchFirst times Get (Chromium start) + the first navigate, each run a
// new browser.
func benchFirst(b *testing.B, e env) {
	var ms []float64
	var hwm, pss int64
	for i := 0; b.Loop(); i++ {
		m := browser.NewManager(e.opts)
		t0 := time.Now()
		br, err := m.Get(context.Background(), "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := br.Navigate(e.url, 30*time.Second); err != nil {
			b.Fatal(err)
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
		h, p := peakRSS(e.marker)
		hwm, pss = max(hwm, h), max(pss, p)
		m.Close()
	}
	report(b, ms, hwm, pss)
}

// benchWarm times navigate + snapshot on a running browser.
func benchWarm(b *testing.B, e env) {
	m := browser.NewManager(e.opts)
	defer m.Close()
	br, err := m.Get(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	var ms []float64
	for b.Loop() {
		t0 := time.Now()
		if _, err := br.Navigate(e.url, 30*time.Second); err != nil {
			b.Fatal(err)
		}
		if _, snap, err := br.Snapshot(false, browser.DefaultSnapshotChars, 30*time.Second); err != nil || !strings.Contains(snap, "item 49") {
			b.Fatalf("snapshot: %v\n%s", err, snap)
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
	}
	h, p := peakRSS(e.marker)
	report(b, ms, h, p)
}

func report(b *testing.B, ms []float64, hwmKB, pssKB int64) {
	slices.Sort(ms)
	b.ReportMetric(ms[len(ms)/2], "ms-median")
	b.ReportMetric(ms[len(ms)*9/10], "ms-p90")
	b.ReportMetric(float64(hwmKB)/1024, "sum-hwm-MB")
	b.ReportMetric(float64(pssKB)/1024, "pss-MB")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkHostFirstNavigate(b *testing.B)        { benchFirst(b, hostEnv(b)) }
func BenchmarkHostWarmNavigateSnapshot(b *testing.B) { benchWarm(b, hostEnv(b)) }
func BenchmarkBoxFirstNavigate(b *testing.B)         { benchFirst(b, boxEnv(b)) }
func BenchmarkBoxWarmNavigateSnapshot(b *testing.B)  { benchWarm(b, boxEnv(b)) }
