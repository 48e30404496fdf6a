package cron

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// fakeClock is a settable clock whose After channels fire when the test
// advances it past their deadline.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.ch <- t
		} else {
			keep = append(keep, w)
		}
	}
	c.waiters = keep
}

func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// fakeDeliverer records deliveries; fail makes them fail.
type fakeDeliverer struct {
	mu   sync.Mutex
	got  []string
	fail error
}

func (d *fakeDeliverer) Deliver(_ context.Context, platform, chat, thread, text string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail != nil {
		return d.fail
	}
	d.got = append(d.got, fmt.Sprintf("%s|%s|%s|%s", platform, chat, thread, text))
	return nil
}

// countingRun answers "done: <prompt>" and counts runs per job.
type countingRun struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *countingRun) run(_ context.Context, j Job) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[j.Name]++
	return "done: " + j.Prompt, nil
}

func newTestScheduler(t *testing.T, clock *fakeClock) (*Scheduler, *countingRun) {
	t.Helper()
	st := NewStore(t.TempDir(), clock.Now)
	cr := &countingRun{}
	return &Scheduler{Store: st, Run: cr.run, Warn: func(m string) { t.Log(m) }}, cr
}

func mustAdd(t *testing.T, st Jobs, j Job) Job {
	t.Helper()
	j, err := st.Add(j)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestMissedRunsRunOnce(t *testing.T) {
	start := date("2026-05-01 08:00")
	clock := &fakeClock{now: start}
	s, cr := newTestScheduler(t, clock)
	mustAdd(t, s.Store, Job{Name: "hourly", Schedule: "every 1h", Prompt: "check"})
	mustAdd(t, s.Store, Job{Name: "nine", Schedule: "0 9 * * *", Prompt: "report"})

	// The machine was off for ten hours: each job runs once, not ten times.
	clock.Set(start.Add(10 * time.Hour))
	runs, err := s.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || cr.runs["hourly"] != 1 || cr.runs["nine"] != 1 {
		t.Fatalf("after downtime: %d runs %v, want each job once", len(runs), cr.runs)
	}
	if runs, _ := s.Tick(context.Background()); len(runs) != 0 {
		t.Fatalf("a second tick at the same time ran %d jobs", len(runs))
	}
	j, _ := s.Store.Get("hourly")
	if want := start.Add(11 * time.Hour); !j.NextRunAt.Equal(want) {
		t.Errorf("next run %s, want %s (one interval after the catch-up run)", j.NextRunAt, want)
	}
	if j.LastStatus != "ok" || j.LastOutput == "" {
		t.Errorf("job after run: status %q output %q", j.LastStatus, j.LastOutput)
	}
	n, _ := s.Store.Get("nine")
	if want := date("2026-05-02 09:00"); !n.NextRunAt.Equal(want) {
		t.Errorf("cron job next run %s, want %s", n.NextRunAt, want)
	}
}

func TestPausedAndOneShotJobs(t *testing.T) {
	start := date("2026-05-01 08:00")
	clock := &fakeClock{now: start}
	s, cr := newTestScheduler(t, clock)
	mustAdd(t, s.Store, Job{Name: "p", Schedule: "every 1h", Prompt: "x"})
	mustAdd(t, s.Store, Job{Name: "once", Schedule: "in 30m", Prompt: "y"})
	if _, err := s.Store.Update("p", func(j *Job) error { j.Paused = true; return nil }); err != nil {
		t.Fatal(err)
	}
	clock.Set(start.Add(3 * time.Hour))
	s.Tick(context.Background())
	clock.Set(start.Add(6 * time.Hour))
	s.Tick(context.Background())
	if cr.runs["p"] != 0 || cr.runs["once"] != 1 {
		t.Fatalf("runs %v: want the paused job never, the one-shot once", cr.runs)
	}
	once, _ := s.Store.Get("once")
	if once.Status() != "done" {
		t.Errorf("one-shot job status %q after its run, want done", once.Status())
	}
	s.Store.Update("p", func(j *Job) error { j.Paused = false; return nil })
	s.Tick(context.Background())
	if cr.runs["p"] != 1 {
		t.Fatalf("resumed job ran %d times, want 1", cr.runs["p"])
	}
}

func TestDeliveryLocalWritesOutputFile(t *testing.T) {
	clock := &fakeClock{now: date("2026-05-01 08:00")}
	s, _ := newTestScheduler(t, clock)
	j := mustAdd(t, s.Store, Job{Name: "news", Schedule: "every 1h", Prompt: "summarise the news"})
	if j.Deliver != "local" {
		t.Fatalf("a job created without origin delivers %q, want local", j.Deliver)
	}
	run, err := s.RunNow(context.Background(), "news")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Store.Dir(), "output", j.ID)
	if filepath.Dir(run.Output) != dir || !strings.HasSuffix(run.Output, ".md") {
		t.Fatalf("output %q, want a .md file in %s", run.Output, dir)
	}
	b, err := os.ReadFile(run.Output)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "done: summarise the news") || !strings.Contains(string(b), "# Cron job: news") {
		t.Errorf("output file:\n%s", b)
	}
	runs, _ := s.Store.Runs(0)
	if len(runs) != 1 || runs[0].Status != "ok" || runs[0].Delivered != "" {
		t.Errorf("ledger %+v", runs)
	}
}

func TestDeliveryToChatAndOrigin(t *testing.T) {
	clock := &fakeClock{now: date("2026-05-01 08:00")}
	s, _ := newTestScheduler(t, clock)
	d := &fakeDeliverer{}
	s.Deliver = d
	mustAdd(t, s.Store, Job{Name: "tg", Schedule: "every 1h", Prompt: "a", Deliver: "telegram:42"})
	o := mustAdd(t, s.Store, Job{Name: "slack", Schedule: "every 1h", Prompt: "b", Origin: "slack:C1:T9"})
	if o.Deliver != "origin" {
		t.Fatalf("a job created from a chat delivers %q, want origin", o.Deliver)
	}
	clock.Set(clock.Now().Add(time.Hour))
	runs, err := s.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"slack|C1|T9|Cronjob Response: slack\n\ndone: b", "telegram|42||Cronjob Response: tg\n\ndone: a"}
	sort.Strings(d.got)
	if strings.Join(d.got, ";") != strings.Join(want, ";") {
		t.Fatalf("delivered %q, want %q", d.got, want)
	}
	for _, r := range runs {
		if r.Status != "ok" || r.Delivered == "" || r.Output == "" {
			t.Errorf("run %+v", r)
		}
	}

	// A failed delivery is its own status; the output stays on disk.
	d.fail = errors.New("chat not found")
	r, err := s.RunNow(context.Background(), "tg")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "delivery_failed" || !strings.Contains(r.Error, "chat not found") || !strings.Contains(r.Error, r.Output) {
		t.Errorf("failed delivery: %+v", r)
	}
	if _, err := os.Stat(r.Output); err != nil {
		t.Errorf("output of a failed delivery: %v", err)
	}
}

func TestFailedRunIsRecordedNotDelivered(t *testing.T) {
	clock := &fakeClock{now: date("2026-05-01 08:00")}
	st := NewStore(t.TempDir(), clock.Now)
	d := &fakeDeliverer{}
	s := &Scheduler{Store: st, Deliver: d, Run: func(context.Context, Job) (string, error) {
		return "", errors.New("model unreachable")
	}}
	mustAdd(t, st, Job{Name: "x", Schedule: "every 1h", Prompt: "a", Deliver: "telegram:1"})
	r, err := s.RunNow(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "error" || len(d.got) != 0 {
		t.Fatalf("run %+v, delivered %v", r, d.got)
	}
	j, _ := st.Get("x")
	if j.LastStatus != "error" || j.LastError != "model unreachable" {
		t.Errorf("job %+v", j)
	}
}

func TestLoopTicksOnTheInjectedClock(t *testing.T) {
	start := date("2026-05-01 08:00")
	clock := &fakeClock{now: start}
	s, cr := newTestScheduler(t, clock)
	job := mustAdd(t, s.Store, Job{Name: "j", Schedule: "every 5m", Prompt: "x"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Loop(ctx, clock, time.Minute)
		close(done)
	}()
	runs := func() int { cr.mu.Lock(); defer cr.mu.Unlock(); return cr.runs["j"] }
	// ended: the job's run lock is free, so its last run has ended. The
	// count goes up when Run is called, but the run holds the lock until
	// its output is written and recorded; under load the 08:05 run was
	// still recording at 08:10, the 08:10 claim was skipped as a run
	// still going (never twice at once), and the test waited in vain.
	ended := func() bool {
		unlock, err := s.Store.(*Store).runLock(job.ID)
		if err != nil {
			return false
		}
		unlock()
		return true
	}
	for m := 1; m <= 12; m++ {
		waitfor.Until(t, "the loop to wait on the clock", func() bool { return clock.pending() == 1 })
		waitfor.Until(t, fmt.Sprintf("%d run(s) ended before %02d:%02d", (m-1)/5, 8, m), func() bool {
			return runs() == (m-1)/5 && ended()
		})
		clock.Set(start.Add(time.Duration(m) * time.Minute))
	}
	waitfor.Until(t, "the loop to wait on the clock", func() bool { return clock.pending() == 1 })
	cancel()
	<-done
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.runs["j"] != 2 { // at 08:05 and 08:10
		t.Fatalf("runs in 12 minutes of an every-5m job: %d, want 2", cr.runs["j"])
	}
}

func TestStoreValidatesAndNamesTheFix(t *testing.T) {
	st := NewStore(t.TempDir(), nil)
	for _, c := range []struct {
		job  Job
		want string
	}{
		{Job{Schedule: "every 1h"}, "needs a prompt"},
		{Job{Schedule: "every 2q", Prompt: "x"}, `"every 2q"`},
		{Job{Schedule: "every 1h", Prompt: "x", Deliver: "pigeon"}, "<platform>:<chat_id>"},
	} {
		if _, err := st.Add(c.job); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add(%+v) = %v, want an error containing %q", c.job, err, c.want)
		}
	}
	mustAdd(t, st, Job{Name: "a", Schedule: "every 1h", Prompt: "x"})
	if _, err := st.Add(Job{Name: "a", Schedule: "every 1h", Prompt: "y"}); err == nil {
		t.Error("a second job with the same name was added")
	}
	if _, err := st.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(nope) = %v", err)
	}
	fi, err := os.Stat(filepath.Join(st.Dir(), "jobs.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("jobs.json: %v %v, want mode 0600", fi.Mode(), err)
	}
}

// The helper process of the cross-process tests: it ticks (or runs)
// the store in CRON_HELPER_HOME at the fixed time CRON_HELPER_NOW; its
// runs append their pid to CRON_HELPER_LOG, announce themselves by
// creating <log>.started and wait for <log>.release when it is set.
func TestHelperProcess(t *testing.T) {
	home := os.Getenv("CRON_HELPER_HOME")
	if home == "" {
		t.Skip("helper process for the cross-process tests")
	}
	now, _ := time.Parse(time.RFC3339, os.Getenv("CRON_HELPER_NOW"))
	log := os.Getenv("CRON_HELPER_LOG")
	s := &Scheduler{Store: NewStore(home, func() time.Time { return now }), Run: func(context.Context, Job) (string, error) {
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return "", err
		}
		fmt.Fprintln(f, os.Getpid())
		f.Close()
		os.WriteFile(log+".started", nil, 0o600)
		for os.Getenv("CRON_HELPER_WAIT") != "" {
			if _, err := os.Stat(log + ".release"); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		return "ok", nil
	}}
	if os.Getenv("CRON_HELPER_MODE") == "run" {
		if _, err := s.RunNow(context.Background(), "job"); err != nil {
			fmt.Println("RUN-ERROR:", err)
		}
		return
	}
	runs, err := s.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("RUNS: %d\n", len(runs))
}

func helper(t *testing.T, home, log string, now time.Time, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), append([]string{
		"CRON_HELPER_HOME=" + home, "CRON_HELPER_LOG=" + log, "CRON_HELPER_NOW=" + now.Format(time.RFC3339),
	}, env...)...)
	return cmd
}

func runLines(t *testing.T, log string) int {
	b, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(strings.Fields(string(b)))
}

func TestNoDoubleRunAcrossProcesses(t *testing.T) {
	start := date("2026-05-01 08:00")
	for round := 0; round < 5; round++ {
		home := t.TempDir()
		log := filepath.Join(home, "runs.log")
		mustAdd(t, NewStore(home, func() time.Time { return start }), Job{Name: "job", Schedule: "every 1h", Prompt: "x"})
		due := start.Add(3 * time.Hour)
		a, b := helper(t, home, log, due), helper(t, home, log, due)
		var outA, outB strings.Builder
		a.Stdout, b.Stdout = &outA, &outB
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		errA, errB := a.Wait(), b.Wait()
		if errA != nil || errB != nil {
			t.Fatalf("helpers: %v %v\n%s\n%s", errA, errB, outA.String(), outB.String())
		}
		if n := runLines(t, log); n != 1 {
			t.Fatalf("round %d: two processes ticking at once ran the job %d times, want 1\n%s\n%s", round, n, outA.String(), outB.String())
		}
	}
}

func TestNoOverlapWithARunInAnotherProcess(t *testing.T) {
	start := date("2026-05-01 08:00")
	home := t.TempDir()
	log := filepath.Join(home, "runs.log")
	st := NewStore(home, func() time.Time { return start })
	mustAdd(t, st, Job{Name: "job", Schedule: "every 1h", Prompt: "x"})
	// Process A starts a manual run that stays running...
	a := helper(t, home, log, start, "CRON_HELPER_MODE=run", "CRON_HELPER_WAIT=1")
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Process.Kill()
	waitfor.Until(t, "the helper's run to start", func() bool { _, err := os.Stat(log + ".started"); return err == nil })
	// ...so B's tick, when the job falls due, skips it, and B's manual run refuses.
	out, err := helper(t, home, log, start.Add(2*time.Hour)).Output()
	if err != nil || !strings.Contains(string(out), "RUNS: 0") {
		t.Fatalf("tick during another process's run: %v\n%s", err, out)
	}
	out, _ = helper(t, home, log, start.Add(2*time.Hour), "CRON_HELPER_MODE=run").Output()
	if !strings.Contains(string(out), "running in another process") {
		t.Fatalf("manual run during another process's run:\n%s", out)
	}
	os.WriteFile(log+".release", nil, 0o600)
	if err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := runLines(t, log); n != 1 {
		t.Fatalf("runs: %d, want 1", n)
	}
	// Once A is done the due job runs on the next tick.
	out, err = helper(t, home, log, start.Add(2*time.Hour)).Output()
	if err != nil || !strings.Contains(string(out), "RUNS: 1") {
		t.Fatalf("tick after the run: %v\n%s", err, out)
	}
}

func TestBrokenJobDoesNotStopTheOthersAndADeadRunIsRecorded(t *testing.T) {
	start := date("2026-05-01 08:00")
	clock := &fakeClock{now: start}
	s, cr := newTestScheduler(t, clock)
	mustAdd(t, s.Store, Job{Name: "good", Schedule: "every 1h", Prompt: "x"})
	mustAdd(t, s.Store, Job{Name: "bad", Schedule: "every 1h", Prompt: "y"})
	// Hand edits: one schedule broken, and one job left "running" by a
	// process that died (its run lock is free).
	path := filepath.Join(s.Store.Dir(), "jobs.json")
	b, _ := os.ReadFile(path)
	b = []byte(strings.Replace(string(b), `"schedule": "every 1h",
      "prompt": "y"`, `"schedule": "every 1 fortnight",
      "prompt": "y"`, 1))
	b = []byte(strings.Replace(string(b), `"deliver": "local",`, `"deliver": "local", "last_status": "running",`, 1))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var warned []string
	s.Warn = func(m string) { warned = append(warned, m) }
	clock.Set(start.Add(2 * time.Hour))
	runs, err := s.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || cr.runs["good"] != 1 {
		t.Fatalf("runs %+v: want the good job to run", runs)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "every 1 fortnight") || !strings.Contains(warned[0], "hermes cron edit") {
		t.Errorf("warnings %q", warned)
	}
	ledger, _ := s.Store.Runs(0)
	if len(ledger) != 2 || ledger[0].Status != "interrupted" || ledger[1].Status != "ok" {
		t.Errorf("ledger %+v: want the dead run recorded as interrupted, then the new run", ledger)
	}
}

// Deliverers hands a delivery to its platform's deliverer; a platform
// with none configured is an error naming the variable that configures it.
func TestDeliverersRouteByPlatform(t *testing.T) {
	tg := &fakeDeliverer{}
	d := Deliverers{"telegram": tg}
	if err := d.Deliver(context.Background(), "telegram", "555", "7", "hi"); err != nil {
		t.Fatal(err)
	}
	if len(tg.got) != 1 || tg.got[0] != "telegram|555|7|hi" {
		t.Fatalf("telegram got %q", tg.got)
	}
	err := d.Deliver(context.Background(), "discord", "1", "", "hi")
	if err == nil || !strings.Contains(err.Error(), "DISCORD_BOT_TOKEN") {
		t.Fatalf("delivery to an unconfigured platform: %v, want an error naming DISCORD_BOT_TOKEN", err)
	}
}
