// Package tui_test benchmarks the TUI end to end: the built hermes binary
// runs on a pseudo-terminal (opened with /dev/ptmx, no tmux) against a
// fake OpenAI-compatible server on loopback.
//
//   - BenchmarkStartToFirstFrame: from exec of `hermes` to the first frame
//     (the status bar naming the model) on the terminal.
//   - BenchmarkKeystrokeDuringStream: while a 100 KB markdown answer
//     streams (256-byte deltas every 10 ms, about 4 s), a key is typed
//     every 40 ms; latency is from writing the key to the pty until the
//     character is drawn.
//
// Run: go test ./bench/tui -run '^$' -bench . -benchtime 5x
// Plain `go test` runs no benchmark (TestMain still builds hermes).
package tui_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var hermesBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hermes-bench-tui-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hermesBin = filepath.Join(dir, "hermes")
	build := exec.Command("go", "build", "-o", hermesBin, "github.com/hermes-go/hermes/cmd/hermes")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building hermes:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// answer is the streamed markdown: paragraphs of ASCII words (the keys
// typed are Greek and Cyrillic letters, so they are told apart on the
// screen).
func answer(size int) string {
	var b strings.Builder
	words := []string{"lorem", "ipsum", "**dolor**", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do"}
	for i := 0; b.Len() < size; i++ {
		b.WriteString(words[i%len(words)] + " ")
		if i%60 == 59 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// server is a fake OpenAI-compatible endpoint: GET /v1/models lists
// bench-model; POST /v1/chat/completions streams text in chunk-byte
// deltas, one every every.
func server(b *testing.B, text string, chunk int, every time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			fmt.Fprint(w, `{"data":[{"id":"bench-model","context_length":128000}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		frame := func(delta map[string]any, finish any) {
			b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "bench-model",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			fl.Flush()
		}
		for i := 0; i < len(text); i += chunk {
			frame(map[string]any{"content": text[i:min(i+chunk, len(text))]}, nil)
			if every > 0 {
				time.Sleep(every)
			}
		}
		frame(map[string]any{}, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	b.Cleanup(srv.Close)
	return srv
}

// screen is the output of hermes on the pty's master side.
type screen struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  []byte
	done bool
}

func (s *screen) read(master *os.File) {
	p := make([]byte, 64<<10)
	for {
		n, err := master.Read(p)
		s.mu.Lock()
		s.buf = append(s.buf, p[:n]...)
		if err != nil {
			s.done = true
		}
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// len is how much has been read so far.
func (s *screen) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buf)
}

// waitFor waits until want appears after offset from; it returns when.
func (s *screen) waitFor(b *testing.B, from int, want string) time.Time {
	deadline := time.AfterFunc(30*time.Second, func() { s.mu.Lock(); s.done = true; s.cond.Broadcast(); s.mu.Unlock() })
	defer deadline.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !bytes.Contains(s.buf[min(from, len(s.buf)):], []byte(want)) {
		if s.done {
			b.Fatalf("never saw %q; output tail:\n%q", want, tail(s.buf))
		}
		s.cond.Wait()
	}
	return time.Now()
}

func tail(b []byte) []byte { return b[max(0, len(b)-2000):] }

// run is one hermes on a pty.
type run struct {
	cmd    *exec.Cmd
	master *os.File
	scr    *screen
}

// start execs hermes on a new 100×40 pty with HERMES_HOME home.
func start(b *testing.B, home, work string) *run {
	master, slave := openPTY(b)
	cmd := exec.Command(hermesBin)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "HERMES_HOME=" + home, "TERM=xterm-256color", "LANG=C.UTF-8"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	r := &run{cmd: cmd, master: master, scr: &screen{}}
	r.scr.cond = sync.NewCond(&r.scr.mu)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	slave.Close()
	go r.scr.read(master)
	return r
}

// quit sends Ctrl-D and waits for hermes to exit.
func (r *run) quit(b *testing.B) {
	_, _ = r.master.Write([]byte{4})
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
		b.Fatalf("hermes did not quit on Ctrl-D; output tail:\n%q", tail(r.scr.buf))
	}
	r.master.Close()
}

// openPTY opens a pseudo-terminal pair sized 100×40.
func openPTY(b *testing.B) (master, slave *os.File) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		b.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		b.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		b.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 100}); err != nil {
		b.Fatal(err)
	}
	return m, s
}

// world writes a HERMES_HOME using srv.
func world(b *testing.B, srv *httptest.Server) (home, work string) {
	root := b.TempDir()
	home, work = filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	cfg := "model:\n  provider: custom\n  default: bench-model\n  base_url: " + srv.URL + "/v1\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	return home, work
}

func report(b *testing.B, name string, d []time.Duration) {
	slices.Sort(d)
	ms := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.5), name+"-ms-p50")
	b.ReportMetric(ms(0.99), name+"-ms-p99")
	b.ReportMetric(ms(1), name+"-ms-max")
}

func BenchmarkStartToFirstFrame(b *testing.B) {
	srv := server(b, "hi", 64, 0)
	home, work := world(b, srv)
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		r := start(b, home, work)
		// The status bar's context share ("… 0%") is in the live region
		// only: the banner printed above it also names the model, and is
		// printed once the first frame is up.
		seen := r.scr.waitFor(b, 0, "0%")
		lat = append(lat, seen.Sub(t0))
		b.StopTimer()
		r.quit(b)
		b.StartTimer()
	}
	report(b, "first-frame", lat)
}

func BenchmarkKeystrokeDuringStream(b *testing.B) {
	// Distinct keys absent from the answer and from escape sequences.
	const keys = "αβγδεζηθικλμνξοπρστυφχψωабвгде"
	srv := server(b, answer(100<<10), 256, 10*time.Millisecond)
	home, work := world(b, srv)
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		r := start(b, home, work)
		r.scr.waitFor(b, 0, "bench-model")
		_, _ = r.master.Write([]byte("go\r"))
		r.scr.waitFor(b, 0, "consectetur")
		for _, k := range keys {
			from := r.scr.len()
			t0 := time.Now()
			if _, err := r.master.Write([]byte(string(k))); err != nil {
				b.Fatal(err)
			}
			seen := r.scr.waitFor(b, from, string(k))
			lat = append(lat, seen.Sub(t0))
			time.Sleep(40 * time.Millisecond)
		}
		b.StopTimer()
		_, _ = r.master.Write([]byte{3}) // Ctrl-C: stop the stream
		time.Sleep(100 * time.Millisecond)
		_, _ = r.master.Write([]byte{21}) // Ctrl-U: clear the editor
		r.quit(b)
		b.StartTimer()
	}
	report(b, "keystroke", lat)
}
