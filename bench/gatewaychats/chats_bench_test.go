// Package gatewaychats measures the gateway under many concurrent chats:
// N Telegram users (the in-repo fake Bot API) each send M messages, one
// after the other with a pause to read and type (THINK), to one gateway
// backed by an instant fake model. It
// reports lost and duplicated answers, the added latency (message sent →
// answer received, p50 and p99), peak RSS and peak goroutines.
//
//	go test ./bench/gatewaychats -run '^$' -bench Chats -benchtime 1x
//	CHATS=200 MESSAGES=3 go test ./bench/gatewaychats -run '^$' -bench Chats -benchtime 1x
//	THINK=0 go test ./bench/gatewaychats -run '^$' -bench Chats -benchtime 1x   # burst
package gatewaychats

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/gateway"
	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// peakRSS is the process's peak resident set (VmHWM), in MiB.
func peakRSS() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// thinkTime is the pause range of a chat's user before each message (the
// first one too, so chats start spread over the first pause): THINK=2s-8s
// by default, a person reading an answer and typing the next message.
// THINK=0 sends every message the moment its answer arrives (a burst: then
// the latency is the queue behind all other chats' messages and measures
// throughput, not the latency a chat sees).
func thinkTime(b *testing.B) (lo, hi time.Duration) {
	v := os.Getenv("THINK")
	if v == "" {
		v = "2s-8s"
	}
	if v == "0" {
		return 0, 0
	}
	a, c, ok := strings.Cut(v, "-")
	lo, err1 := time.ParseDuration(a)
	hi, err2 := time.ParseDuration(c)
	if !ok || err1 != nil || err2 != nil || hi < lo {
		b.Fatalf("THINK=%q: want MIN-MAX durations such as 2s-8s, or 0", v)
	}
	return lo, hi
}

func BenchmarkChats(b *testing.B) {
	chats, messages := envInt("CHATS", 1000), envInt("MESSAGES", 5)
	lo, hi := thinkTime(b)
	for range b.N {
		runChats(b, chats, messages, lo, hi)
	}
}

func runChats(b *testing.B, chats, messages int, thinkLo, thinkHi time.Duration) {
	model := llmtest.NewServer(b)
	model.ForgetBodies() // the fake model is the network edge: its memory is not the gateway's
	model.SetResponder(func(r llmtest.Request) llmtest.Turn {
		var last string
		if i := strings.LastIndex(string(r.Body), `"content":"msg `); i >= 0 {
			last = string(r.Body[i+len(`"content":"`):])
			last = last[:strings.IndexByte(last, '"')]
		}
		return llmtest.Turn{Text: "re: " + last}
	})
	fake := telegramtest.New("1:BENCH")
	defer fake.Close()
	type chatState struct {
		got chan telegramtest.Message
	}
	state := make([]*chatState, chats+1)
	for i := range state {
		state[i] = &chatState{got: make(chan telegramtest.Message, messages*2)}
	}
	var dup atomic.Int32
	fake.OnSend = func(m telegramtest.Message) {
		if m.ChatID > 0 && int(m.ChatID) <= chats {
			select {
			case state[m.ChatID].got <- m:
			default:
				dup.Add(1)
			}
		}
	}
	home := b.TempDir()
	cfg := "model:\n  provider: custom\n  default: fake\n  base_url: " + model.URL + "\nterminal:\n  cwd: " + b.TempDir() +
		"\ncompression:\n  enabled: false\nmemory:\n  memory_enabled: false\n  user_profile_enabled: false\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	loaded, err := config.Load(home, config.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rt, err := session.New(context.Background(), session.Options{Config: loaded, Home: home, UserHome: b.TempDir(),
		Platform: "telegram", MaxSessions: chats + 16})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	allowed := map[int64]bool{}
	for i := 1; i <= chats; i++ {
		allowed[int64(i)] = true
	}
	tg, err := gateway.NewTelegram(context.Background(), rt, gateway.TelegramConfig{Token: fake.Token, BaseURL: fake.URL,
		Allowed: allowed, PollTimeout: 2 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tg.Run(ctx) }()

	var peakG atomic.Int64
	stopSample := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSample:
				return
			case <-t.C:
				if n := int64(runtime.NumGoroutine()); n > peakG.Load() {
					peakG.Store(n)
				}
			}
		}
	}()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		lost      atomic.Int32
		wrong     atomic.Int32
		wg        sync.WaitGroup
	)
	b.ResetTimer()
	cpuStart := cpuTime()
	start := time.Now()
	for c := 1; c <= chats; c++ {
		wg.Go(func() {
			st := state[c]
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for m := range messages {
				if thinkHi > 0 {
					time.Sleep(thinkLo + time.Duration(rng.Int64N(int64(thinkHi-thinkLo)+1)))
				}
				text := fmt.Sprintf("msg %d-%d", c, m)
				sent := time.Now()
				fake.SendText(int64(c), int64(c), "private", text)
				select {
				case got := <-st.got:
					d := time.Since(sent)
					if got.Text != "re: "+text {
						if wrong.Add(1) <= 3 {
							b.Logf("chat %d: sent %q, got %q", c, text, got.Text)
						}
					}
					mu.Lock()
					latencies = append(latencies, d)
					mu.Unlock()
				case <-time.After(60 * time.Second):
					lost.Add(int32(messages - m))
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpuStart
	time.Sleep(200 * time.Millisecond) // late duplicates would arrive now
	for c := 1; c <= chats; c++ {
		dup.Add(int32(len(state[c].got)))
	}
	b.StopTimer()
	close(stopSample)
	cancel()
	<-done
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		return float64(latencies[int(float64(len(latencies)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(float64(lost.Load()), "lost")
	b.ReportMetric(float64(dup.Load()), "duplicated")
	b.ReportMetric(float64(wrong.Load()), "wrong")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(peakRSS(), "peak-RSS-MiB")
	b.ReportMetric(float64(peakG.Load()), "peak-goroutines")
	b.ReportMetric(float64(chats*messages)/elapsed.Seconds(), "answers/s")
	// CPU time (user+system) of the whole process per answer: the gateway,
	// the fake Bot API and the fake model together; on a shared machine it
	// moves less than the wall-clock figures.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(chats*messages), "cpu-ms/answer")
	if lost.Load() > 0 || dup.Load() > 0 || wrong.Load() > 0 {
		b.Errorf("%d lost, %d duplicated, %d wrong answers", lost.Load(), dup.Load(), wrong.Load())
	}
}
