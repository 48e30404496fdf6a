package cron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/renameio/v2"
)

// RunFunc runs a job's prompt through the agent and returns the final
// answer. An error is a failed run (recorded, not delivered).
type RunFunc func(ctx context.Context, job Job) (output string, err error)

// Deliverer sends a run's output to a chat: platform is "telegram",
// "discord", "slack"..., chatID the platform's chat (or channel) id and
// threadID "" or a thread within it. The gateway's platform adapters
// implement it. An error makes the run's status "delivery_failed"; the
// output stays in the local file.
type Deliverer interface {
	Deliver(ctx context.Context, platform, chatID, threadID, text string) error
}

// Deliverers routes a delivery to the Deliverer of the platform it names
// (lower case: "telegram"). An unknown platform is an error naming the
// variable to set.
type Deliverers map[string]Deliverer

// Deliver implements Deliverer.
func (p Deliverers) Deliver(ctx context.Context, platform, chatID, threadID, text string) error {
	d, ok := p[platform]
	if !ok {
		return fmt.Errorf("no %s connection is configured (set %s_BOT_TOKEN in HERMES_HOME/.env)", platform, strings.ToUpper(platform))
	}
	return d.Deliver(ctx, platform, chatID, threadID, text)
}

// Clock is the time source of the ticker loop (injected in tests).
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real Clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// TickInterval is how often the gateway's ticker looks for due jobs
// (Hermes Agent: every 60 s).
const TickInterval = time.Minute

// DefaultTimeout bounds one run (Hermes: HERMES_CRON_TIMEOUT, 600 s).
const DefaultTimeout = 600 * time.Second

// DefaultMaxParallel bounds concurrent runs of one tick
// (HERMES_CRON_MAX_PARALLEL, 4).
const DefaultMaxParallel = 4

// Scheduler runs due jobs of a Store.
type Scheduler struct {
	Store Jobs
	Run   RunFunc
	// Deliver sends output to chats; nil leaves platform deliveries
	// failed ("delivery_failed") with the output kept locally.
	Deliver Deliverer
	// Now is the clock (nil = the store's).
	Now func() time.Time
	// Timeout bounds one run (0 = DefaultTimeout).
	Timeout time.Duration
	// MaxParallel bounds concurrent runs (0 = DefaultMaxParallel).
	MaxParallel int
	// Warn receives one-line messages for the operator (nil = dropped).
	Warn func(string)
}

// Run is the record of one run, appended to cron/runs.jsonl.
type Run struct {
	JobID    string    `json:"job_id"`
	Name     string    `json:"name"`
	Started  time.Time `json:"started_at"`
	Finished time.Time `json:"finished_at"`
	// Status is "ok", "error", "delivery_failed" or "interrupted" (the
	// process running it died; recorded by the next claim).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Output is the path of the output file.
	Output string `json:"output,omitempty"`
	// Delivered names the chat the output went to ("" = local only).
	Delivered string `json:"delivered,omitempty"`
}

func (s *Scheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return s.Store.Now()
}

func (s *Scheduler) warn(msg string) {
	if s.Warn != nil {
		s.Warn(msg)
	}
}

// Tick runs every due job once and returns their runs. A job is due when
// it is not paused and its next run time is not after now; claiming it
// moves its next run to the schedule's first time after now (so runs
// missed while nothing ticked collapse into this one) while holding the
// job's run lock (Jobs.Claim): a job running in another process, or
// claimed by it first, is skipped.
func (s *Scheduler) Tick(ctx context.Context) ([]Run, error) {
	jobs, err := s.claimDue()
	if err != nil {
		return nil, err
	}
	return s.runAll(ctx, jobs), nil
}

// claimDue claims the due jobs (see Tick). A job whose schedule no longer
// parses is skipped with a warning; one left "running" with its run lock
// free (the process running it died) gets an "interrupted" run first.
func (s *Scheduler) claimDue() ([]Claimed, error) {
	now := s.now()
	return s.Store.Claim(now, "", func(j *Job) error {
		sched, err := ParseSchedule(j.Schedule)
		if err != nil {
			err = fmt.Errorf("cron job %s (%s) is skipped: %w; fix it with `hermes cron edit %s --schedule ...`", j.Name, j.ID, err, j.ID)
			s.warn("cron: " + err.Error()) // one broken job does not stop the others
			return err
		}
		if j.LastStatus == "running" {
			if err := s.Store.AppendRun(Run{JobID: j.ID, Name: j.Name, Started: j.LastRunAt, Status: "interrupted",
				Error: "the process running the job ended before it finished"}); err != nil {
				s.warn(fmt.Sprintf("cron: job %s: %v", j.ID, err))
			}
		}
		j.NextRunAt = sched.Next(now)
		j.LastRunAt, j.LastStatus, j.LastError = now, "running", ""
		return nil
	})
}

// RunNow runs the job ref names immediately, whatever its schedule (which
// stays as it is). It fails when the job is running elsewhere.
func (s *Scheduler) RunNow(ctx context.Context, ref string) (Run, error) {
	now := s.now()
	cs, err := s.Store.Claim(now, ref, func(j *Job) error {
		j.LastRunAt, j.LastStatus, j.LastError = now, "running", ""
		return nil
	})
	if err != nil {
		return Run{}, err
	}
	if len(cs) != 1 {
		for _, c := range cs {
			c.Release()
		}
		return Run{}, fmt.Errorf("cron job %q: claimed %d jobs, want 1", ref, len(cs))
	}
	return s.runAll(ctx, cs)[0], nil
}

// runAll runs the claimed jobs, at most MaxParallel at once, and returns
// their runs in order.
func (s *Scheduler) runAll(ctx context.Context, jobs []Claimed) []Run {
	limit := s.MaxParallel
	if limit <= 0 {
		limit = DefaultMaxParallel
	}
	sem := make(chan struct{}, limit)
	runs := make([]Run, len(jobs))
	var wg sync.WaitGroup
	for i, c := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer c.Release()
			runs[i] = s.runOne(ctx, c.Job)
		}()
	}
	wg.Wait()
	return runs
}

// runOne runs a claimed job, keeps its output, delivers it and records
// the run.
func (s *Scheduler) runOne(ctx context.Context, j Job) Run {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	r := Run{JobID: j.ID, Name: j.Name, Started: s.now()}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	out, err := s.Run(rctx, j)
	cancel()
	r.Finished = s.now()
	r.Status = "ok"
	if err != nil {
		r.Status, r.Error = "error", err.Error()
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			r.Error = fmt.Sprintf("the run took longer than %s (HERMES_CRON_TIMEOUT) and was stopped", timeout)
		}
	}
	path, werr := s.writeOutput(j, r, out)
	if werr != nil {
		s.warn(fmt.Sprintf("cron: job %s: %v", j.ID, werr))
	}
	r.Output = path
	if err == nil {
		s.deliver(ctx, j, &r, out)
	}
	s.record(j, r)
	return r
}

// deliver sends the output to the job's chat, if it has one.
func (s *Scheduler) deliver(ctx context.Context, j Job, r *Run, out string) {
	target := j.Deliver
	if target == "origin" {
		target = j.Origin
	}
	if target == "" || target == "local" {
		return
	}
	parts := strings.SplitN(target, ":", 3)
	if len(parts) < 2 {
		r.Status, r.Error = "delivery_failed", fmt.Sprintf("deliver target %q is not <platform>:<chat_id>", target)
		return
	}
	thread := ""
	if len(parts) == 3 {
		thread = parts[2]
	}
	if s.Deliver == nil {
		r.Status, r.Error = "delivery_failed", fmt.Sprintf("no %s connection to deliver to %s; the output is in %s", parts[0], target, r.Output)
		return
	}
	text := fmt.Sprintf("Cronjob Response: %s\n\n%s", j.Name, out)
	if err := s.Deliver.Deliver(ctx, parts[0], parts[1], thread, text); err != nil {
		r.Status, r.Error = "delivery_failed", fmt.Sprintf("delivering to %s: %v; the output is in %s", target, err, r.Output)
		return
	}
	r.Delivered = target
}

// writeOutput writes cron/output/<job id>/<start time>.md.
func (s *Scheduler) writeOutput(j Job, r Run, out string) (string, error) {
	dir := filepath.Join(s.Store.Dir(), "output", j.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, r.Started.UTC().Format("2006-01-02T15-04-05Z")+".md")
	var b strings.Builder
	fmt.Fprintf(&b, "# Cron job: %s\n\n- id: %s\n- schedule: %s\n- started: %s\n- finished: %s\n- status: %s\n",
		j.Name, j.ID, j.Schedule, r.Started.Format(time.RFC3339), r.Finished.Format(time.RFC3339), r.Status)
	if r.Error != "" {
		fmt.Fprintf(&b, "- error: %s\n", r.Error)
	}
	fmt.Fprintf(&b, "\n## Prompt\n\n%s\n\n## Response\n\n%s\n", j.Prompt, out)
	if err := renameio.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// record stores the run's outcome on the job and appends it to the ledger.
func (s *Scheduler) record(j Job, r Run) {
	_, err := s.Store.Update(j.ID, func(cur *Job) error {
		cur.LastStatus, cur.LastError, cur.LastOutput = r.Status, r.Error, r.Output
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.warn(fmt.Sprintf("cron: job %s: recording the run: %v", j.ID, err))
	}
	if err := s.Store.AppendRun(r); err != nil {
		s.warn(fmt.Sprintf("cron: job %s: %v", j.ID, err))
	}
}

// AppendRun implements Jobs: r is one JSON line of cron/runs.jsonl.
func (s *Store) AppendRun(r Run) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(s.dir, "runs.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err // *PathError: names the file
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Runs returns the last n runs of the ledger (all with n <= 0), oldest first.
func (s *Store) Runs(n int) ([]Run, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "runs.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r Run
		if line != "" && json.Unmarshal([]byte(line), &r) == nil {
			out = append(out, r)
		}
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

// Loop claims due jobs now and then every interval of clock until ctx
// ends. Runs go on in the background, so a long run does not hold up
// other jobs (the run lock keeps a job from overlapping itself); their
// context is ctx without its cancellation, bounded by Timeout. Loop
// returns when ctx has ended and the runs in progress have finished.
func (s *Scheduler) Loop(ctx context.Context, clock Clock, interval time.Duration) {
	if interval <= 0 {
		interval = TickInterval
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx := context.WithoutCancel(ctx)
	for {
		jobs, err := s.claimDue()
		if err != nil {
			s.warn("cron: " + err.Error())
		}
		if len(jobs) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.runAll(runCtx, jobs)
			}()
		}
		select {
		case <-ctx.Done():
			return
		case <-clock.After(interval):
		}
	}
}

// Router is a Deliverer whose platforms may be added while it is in use:
// the gateway hands it to sessions and the ticker before its chat
// platforms run, then adds each one (Set), replacing the bot-token
// deliverer of that platform.
type Router struct {
	mu sync.RWMutex
	m  Deliverers
}

// NewRouter returns a Router starting with the deliverers of base.
func NewRouter(base Deliverers) *Router {
	r := &Router{m: Deliverers{}}
	for name, d := range base {
		r.m[name] = d
	}
	return r
}

// Set routes platform's deliveries to d.
func (r *Router) Set(platform string, d Deliverer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[platform] = d
}

// Deliver implements Deliverer.
func (r *Router) Deliver(ctx context.Context, platform, chatID, threadID, text string) error {
	r.mu.RLock()
	d, ok := r.m[platform]
	r.mu.RUnlock()
	if !ok {
		return Deliverers{}.Deliver(ctx, platform, chatID, threadID, text) // the error naming the variable
	}
	return d.Deliver(ctx, platform, chatID, threadID, text)
}
