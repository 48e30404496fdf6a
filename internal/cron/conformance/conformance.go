// Package conformance is the test suite every cron.Jobs implementation
// passes: the file store of one HERMES_HOME and the PostgreSQL tables.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
)

// Opener returns n handles on one fresh job store, as n processes (or n
// replicas on n machines) would open it, all on the clock now.
type Opener func(t *testing.T, n int, now func() time.Time) []cron.Jobs

// Start is the time jobs are created at.
var Start = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

// Run runs the suite.
func Run(t *testing.T, open Opener) {
	t.Run("AddGetUpdateRemove", func(t *testing.T) { crud(t, open) })
	t.Run("ClaimByNameRefusesARunningJob", func(t *testing.T) { claimByName(t, open) })
	t.Run("Ledger", func(t *testing.T) { ledger(t, open) })
	t.Run("ThreeSchedulersRunEachDueJobOnce", func(t *testing.T) { threeSchedulers(t, open) })
}

func fixed(at time.Time) func() time.Time { return func() time.Time { return at } }

func crud(t *testing.T, open Opener) {
	h := open(t, 2, fixed(Start))
	a, b := h[0], h[1]
	j, err := a.Add(cron.Job{Name: "daily", Schedule: "0 9 * * *", Prompt: "summarise", Deliver: "telegram:42", Skills: []string{"news"}})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID == "" || !j.CreatedAt.Equal(Start) || !j.NextRunAt.Equal(Start.Add(time.Hour)) {
		t.Fatalf("added %+v: want an id, created at %s, next run at 09:00", j, Start)
	}
	if _, err := b.Add(cron.Job{Name: "daily", Schedule: "every 1h", Prompt: "x"}); err == nil || !strings.Contains(err.Error(), j.ID) {
		t.Fatalf("a second job named daily: %v, want an error naming %s", err, j.ID)
	}
	if _, err := b.Add(cron.Job{Schedule: "every 2q", Prompt: "x"}); err == nil || !strings.Contains(err.Error(), "every 2q") {
		t.Fatalf("a bad schedule: %v", err)
	}
	for _, ref := range []string{j.ID, "daily", j.ID[:6]} {
		got, err := b.Get(ref)
		if err != nil || got.ID != j.ID || got.Deliver != "telegram:42" || len(got.Skills) != 1 || !got.NextRunAt.Equal(j.NextRunAt) {
			t.Fatalf("Get(%q) = %+v, %v", ref, got, err)
		}
	}
	if _, err := a.Get("nope"); !errors.Is(err, cron.ErrNotFound) {
		t.Fatalf("Get(nope) = %v, want ErrNotFound", err)
	}
	if _, err := a.Update("daily", func(j *cron.Job) error { j.Deliver = "pigeon"; return nil }); err == nil {
		t.Fatal("an update to a bad deliver target was stored")
	}
	up, err := b.Update("daily", func(j *cron.Job) error { j.Paused = true; j.Schedule = "every 30m"; return nil })
	if err != nil || !up.Paused || !up.NextRunAt.Equal(Start.Add(30*time.Minute)) || up.Deliver != "telegram:42" {
		t.Fatalf("Update = %+v, %v", up, err)
	}
	if _, err := a.Add(cron.Job{Name: "second", Schedule: "every 1h", Prompt: "y"}); err != nil {
		t.Fatal(err)
	}
	list, err := a.List()
	if err != nil || len(list) != 2 || list[0].Name != "daily" || !list[0].Paused || list[1].Name != "second" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	gone, err := b.Remove("daily")
	if err != nil || gone.ID != j.ID {
		t.Fatalf("Remove = %+v, %v", gone, err)
	}
	if _, err := a.Get(j.ID); !errors.Is(err, cron.ErrNotFound) {
		t.Fatalf("Get after Remove: %v", err)
	}
}

func claimByName(t *testing.T, open Opener) {
	later := Start.Add(3 * time.Hour)
	h := open(t, 2, fixed(Start))
	a, b := h[0], h[1]
	j, err := a.Add(cron.Job{Name: "job", Schedule: "every 1h", Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	running := func(j *cron.Job) error { j.LastStatus = "running"; return nil }
	held, err := a.Claim(later, "job", running)
	if err != nil || len(held) != 1 || held[0].Job.ID != j.ID || held[0].Job.LastStatus != "running" {
		t.Fatalf("Claim(job) = %+v, %v", held, err)
	}
	if _, err := b.Claim(later, "job", running); err == nil || !strings.Contains(err.Error(), "running in another process") {
		t.Fatalf("claiming a running job by name: %v, want RunningError", err)
	}
	if due, err := b.Claim(later, "", running); err != nil || len(due) != 0 {
		t.Fatalf("a due claim took the running job: %+v, %v", due, err)
	}
	if got, _ := b.Get("job"); got.LastStatus != "running" || !got.NextRunAt.Equal(j.NextRunAt) {
		t.Fatalf("stored after the claim by name: %+v (next run must not move)", got)
	}
	held[0].Release()
	again, err := b.Claim(later, "", func(j *cron.Job) error { j.NextRunAt = later.Add(time.Hour); return nil })
	if err != nil || len(again) != 1 {
		t.Fatalf("due claim after Release = %+v, %v", again, err)
	}
	again[0].Release()
	if due, err := a.Claim(later, "", running); err != nil || len(due) != 0 {
		t.Fatalf("a job claimed for its due time was claimed again: %+v, %v", due, err)
	}
	skip, err := a.Claim(later.Add(time.Hour), "", func(*cron.Job) error { return errors.New("broken schedule") })
	if err != nil || len(skip) != 0 {
		t.Fatalf("take refusing the job: %+v, %v", skip, err)
	}
	if got, _ := a.Get("job"); !got.NextRunAt.Equal(later.Add(time.Hour)) {
		t.Fatalf("a job take refused was changed: %+v", got)
	}
}

func ledger(t *testing.T, open Opener) {
	h := open(t, 2, fixed(Start))
	if runs, err := h[0].Runs(0); err != nil || len(runs) != 0 {
		t.Fatalf("empty ledger: %+v, %v", runs, err)
	}
	for i := range 3 {
		r := cron.Run{JobID: fmt.Sprint("j", i), Name: "n", Started: Start.Add(time.Duration(i) * time.Minute),
			Finished: Start.Add(time.Duration(i)*time.Minute + time.Second), Status: "ok", Output: "/out", Delivered: "telegram:1"}
		if err := h[i%2].AppendRun(r); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := h[1].Runs(2)
	if err != nil || len(runs) != 2 || runs[0].JobID != "j1" || runs[1].JobID != "j2" || runs[1].Delivered != "telegram:1" ||
		!runs[1].Started.Equal(Start.Add(2*time.Minute)) {
		t.Fatalf("Runs(2) = %+v, %v", runs, err)
	}
	if all, _ := h[0].Runs(0); len(all) != 3 {
		t.Fatalf("Runs(0) = %d runs, want 3", len(all))
	}
}

// threeSchedulers: 100 jobs fall due at once; three schedulers, one per
// handle, tick together: each job runs exactly once (counted by the run
// function and by the ledger).
func threeSchedulers(t *testing.T, open Opener) {
	const jobs = 100
	h := open(t, 3, fixed(Start))
	for i := range jobs {
		if _, err := h[i%3].Add(cron.Job{Name: fmt.Sprint("job", i), Schedule: "every 1h", Prompt: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	ran := map[string]int{}
	run := func(_ context.Context, j cron.Job) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		ran[j.Name]++
		return "done", nil
	}
	due := Start.Add(90 * time.Minute)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &cron.Scheduler{Store: h[i], Run: run, Now: fixed(due), MaxParallel: 8}
			_, errs[i] = s.Tick(context.Background())
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		if n := ran[fmt.Sprint("job", i)]; n != 1 {
			t.Fatalf("job%d ran %d times across three schedulers, want 1", i, n)
		}
	}
	runs, err := h[0].Runs(0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range runs {
		if r.Status != "ok" || seen[r.JobID] {
			t.Fatalf("ledger run %+v: want one ok run per job", r)
		}
		seen[r.JobID] = true
	}
	if len(seen) != jobs {
		t.Fatalf("ledger has runs of %d jobs, want %d", len(seen), jobs)
	}
	for _, hh := range h {
		s := &cron.Scheduler{Store: hh, Run: run, Now: fixed(due)}
		if again, err := s.Tick(context.Background()); err != nil || len(again) != 0 {
			t.Fatalf("a second tick at the same time ran %d jobs (%v), want 0", len(again), err)
		}
	}
}
