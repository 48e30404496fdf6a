package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Run with: go test -run XXX -bench StalledUpload -benchtime 200x ./internal/egress/
//
// BenchmarkStalledUploadAttack: box "attacker" (container_memory 256 MiB)
// opens stalledUploads intercepted connections to its secret host, each
// announcing an 8 MiB body, sending all but one byte and stalling; box
// "victim" meanwhile makes small GETs to its own secret host (one per
// iteration). Reported: the gate's heap and the process RSS growth under
// the attack against the attacker's Limits.MemoryCap, and the victim's
// median latency before and during the attack. "unlimited" lifts the
// limits, as the gate was before them.
func BenchmarkStalledUploadAttack(b *testing.B) {
	for _, tc := range []struct {
		name string
		lim  Limits
	}{
		{"limited", Limits{}},
		{"unlimited", Limits{MaxConns: 1 << 20, MaxBuffered: 1 << 40, MaxBodyBuffer: 8 << 20}},
	} {
		b.Run(tc.name, func(b *testing.B) { benchStalledUploads(b, tc.lim) })
	}
}

const stalledUploads = 64

func benchStalledUploads(b *testing.B, lim Limits) {
	upCA := newTestCA(b)
	resolver := newFakeResolver(map[string]string{"api.secret.test": "127.0.0.1"})
	g, err := New(Options{Home: b.TempDir(), Allow: []string{"127.0.0.1/32"}, Resolver: resolver, RootCAs: upCA.pool,
		BoxMemoryMiB: 256, Limits: lim,
		Secrets: []Secret{{Name: "API_KEY", Value: realKey, Hosts: []string{"api.secret.test"}}}})
	if err != nil {
		b.Fatal(err)
	}
	port := upCA.upstream(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}), "api.secret.test")
	attacker, attackerAddr := benchSession(b, g, "attacker")
	victim, victimAddr := benchSession(b, g, "victim")
	victimRig := &rig{proxyAddr: victimAddr, session: victim}
	c := victimRig.client(victimRig.boxRoots(b))
	u := fmt.Sprintf("https://api.secret.test:%d/", port)
	latency := func(n int) time.Duration {
		var d []time.Duration
		for range n {
			t0 := time.Now()
			benchGet(b, c, u)
			d = append(d, time.Since(t0))
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	idle := latency(50)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore := rssBytes()
	roots := (&rig{session: attacker}).boxRoots(b)
	payload := make([]byte, 8<<20-1)
	var wg sync.WaitGroup
	var conns sync.Map
	for i := range stalledUploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := stalledUpload(attackerAddr, port, roots, payload)
			if conn != nil {
				conns.Store(i, conn)
			}
		}()
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond) // let the gate take what it reads
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	rssDuring := rssBytes()

	b.ResetTimer()
	var d []time.Duration
	for b.Loop() {
		t0 := time.Now()
		benchGet(b, c, u)
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(d)
	open := 0
	conns.Range(func(_, v any) bool { open++; v.(net.Conn).Close(); return true })
	capBytes := g.opts.Limits.MemoryCap()
	b.ReportMetric(float64(int64(during.HeapInuse)-int64(before.HeapInuse))/(1<<20), "gate-heap-MiB")
	b.ReportMetric(float64(rssDuring-rssBefore)/(1<<20), "rss-growth-MiB")
	b.ReportMetric(float64(capBytes)/(1<<20), "cap-MiB")
	b.ReportMetric(float64(open), "stalled-conns")
	b.ReportMetric(float64(idle.Microseconds()), "victim-idle-p50-us")
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "victim-attack-p50-us")
}

// stalledUpload opens CONNECT + TLS to the secret host through addr and
// sends a POST announcing len(payload)+1 bytes and only payload. It
// returns the connection while the gate keeps it (nil once refused).
func stalledUpload(addr string, port int, roots *x509.CertPool, payload []byte) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil
	}
	fmt.Fprintf(c, "CONNECT api.secret.test:%d HTTP/1.1\r\nHost: x\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		c.Close()
		return nil
	}
	tc := tls.Client(c, &tls.Config{ServerName: "api.secret.test", RootCAs: roots})
	fmt.Fprintf(tc, "POST /upload HTTP/1.1\r\nHost: api.secret.test:%d\r\nContent-Length: %d\r\n\r\n", port, len(payload)+1)
	tc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := tc.Write(payload); err != nil {
		tc.Close()
		return nil
	}
	return tc
}

// benchSession serves a new box session of g on a loopback listener.
func benchSession(b *testing.B, g *Gate, task string) (*BoxSession, string) {
	s, err := g.NewBox(task)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); s.ServeConn(ctx, c) }()
		}
	}()
	b.Cleanup(func() { ln.Close(); cancel(); wg.Wait(); s.Close() })
	return s, ln.Addr().String()
}

// rssBytes is the process's resident set size (Linux), 0 when unknown.
func rssBytes() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
