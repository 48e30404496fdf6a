package cron

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/lazyregexp"
)

// Job is one scheduled job as stored in HERMES_HOME/cron/jobs.json (field
// names as in Hermes Agent's jobs.json).
type Job struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Schedule is the text ParseSchedule reads ("0 9 * * *", "every 30m").
	Schedule string `json:"schedule"`
	Prompt   string `json:"prompt"`
	// Skills are loaded into the run's prompt, in order.
	Skills []string `json:"skills,omitempty"`
	// Deliver is "local", "origin" or "<platform>:<chat_id>[:<thread_id>]".
	Deliver string `json:"deliver"`
	// Origin is the "<platform>:<chat_id>" the job was created from, the
	// target of Deliver "origin"; "" when created from the CLI.
	Origin    string    `json:"origin,omitempty"`
	Paused    bool      `json:"paused,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// NextRunAt is when the job is due; zero once a one-shot job ran.
	NextRunAt time.Time `json:"next_run_at,omitzero"`
	LastRunAt time.Time `json:"last_run_at,omitzero"`
	// LastStatus is "ok", "error", "delivery_failed" or "running".
	LastStatus string `json:"last_status,omitempty"`
	LastError  string `json:"last_error,omitempty"`
	// LastOutput is the path of the last run's output file.
	LastOutput string `json:"last_output,omitempty"`
}

// Done reports whether the job will not run again (a one-shot job that ran).
func (j Job) Done() bool { return j.NextRunAt.IsZero() }

// Status names the job's state for listings: paused, done or scheduled.
func (j Job) Status() string {
	switch {
	case j.Paused:
		return "paused"
	case j.Done():
		return "done"
	}
	return "scheduled"
}

// ErrNotFound is returned for a job id or name no job has.
var ErrNotFound = errors.New("no such cron job (see `hermes cron list`)")

var _ Jobs = (*Store)(nil)

// Store keeps the jobs of one HERMES_HOME. Every change is a
// read-modify-write of jobs.json under an exclusive flock(2) on
// cron/.jobs.lock, replacing the file atomically (mode 0600), so processes
// sharing the home never lose each other's changes.
type Store struct {
	dir string
	now func() time.Time
}

// NewStore returns the store under home/cron; now is the clock (nil =
// time.Now).
func NewStore(home string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{dir: filepath.Join(home, "cron"), now: now}
}

// Dir is HERMES_HOME/cron.
func (s *Store) Dir() string { return s.dir }

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

func (s *Store) jobsPath() string { return filepath.Join(s.dir, "jobs.json") }

// List returns the jobs sorted by creation time.
func (s *Store) List() ([]Job, error) {
	var out []Job
	err := s.locked(func(jobs *[]Job) (bool, error) {
		out = append(out, *jobs...)
		return false, nil
	})
	return out, err
}

// Get returns the job whose id, id prefix or name is ref.
func (s *Store) Get(ref string) (Job, error) {
	var out Job
	err := s.locked(func(jobs *[]Job) (bool, error) {
		i, err := Find(*jobs, ref)
		if err == nil {
			out = (*jobs)[i]
		}
		return false, err
	})
	return out, err
}

// Add implements Jobs.
func (s *Store) Add(j Job) (Job, error) {
	j, err := Prepare(j, s.now())
	if err != nil {
		return Job{}, err
	}
	err = s.locked(func(jobs *[]Job) (bool, error) {
		for _, o := range *jobs {
			if o.Name == j.Name {
				return false, NameTaken(o)
			}
		}
		*jobs = append(*jobs, j)
		return true, nil
	})
	return j, err
}

// Update implements Jobs.
func (s *Store) Update(ref string, fn func(*Job) error) (Job, error) {
	var out Job
	err := s.locked(func(jobs *[]Job) (bool, error) {
		i, err := Find(*jobs, ref)
		if err != nil {
			return false, err
		}
		j, err := Apply((*jobs)[i], fn, s.now())
		if err != nil {
			return false, err
		}
		(*jobs)[i], out = j, j
		return true, nil
	})
	return out, err
}

// Remove deletes the job ref names and returns it. Its output files stay.
func (s *Store) Remove(ref string) (Job, error) {
	var out Job
	err := s.locked(func(jobs *[]Job) (bool, error) {
		i, err := Find(*jobs, ref)
		if err != nil {
			return false, err
		}
		out = (*jobs)[i]
		*jobs = append((*jobs)[:i], (*jobs)[i+1:]...)
		return true, nil
	})
	return out, err
}

// Claim implements Jobs: under the store's lock, each job's run lock an
// exclusive flock(2) on cron/locks/<id>.lock, which goes with the process
// holding it (a crashed run never leaves it stale).
func (s *Store) Claim(now time.Time, ref string, take func(*Job) error) ([]Claimed, error) {
	var out []Claimed
	err := s.locked(func(all *[]Job) (bool, error) {
		idx, err := claimable(*all, now, ref)
		if err != nil {
			return false, err
		}
		for _, i := range idx {
			c, err := s.claimOne(&(*all)[i], take)
			switch {
			case err == nil:
				out = append(out, c)
			case ref != "" && errors.Is(err, errBusy):
				return false, RunningError((*all)[i])
			case ref != "" || !errors.Is(err, errBusy) && !errors.Is(err, errSkipped):
				return len(out) > 0, err
			}
		}
		return len(out) > 0, nil
	})
	if err != nil {
		for _, c := range out {
			c.Release()
		}
		return nil, err
	}
	return out, nil
}

// claimable returns the indexes of the jobs Claim considers: the one ref
// names, or those due at now when ref is "".
func claimable(all []Job, now time.Time, ref string) ([]int, error) {
	if ref != "" {
		i, err := Find(all, ref)
		if err != nil {
			return nil, err
		}
		return []int{i}, nil
	}
	var idx []int
	for i, j := range all {
		if j.Due(now) {
			idx = append(idx, i)
		}
	}
	return idx, nil
}

// errSkipped marks a job take refused.
var errSkipped = errors.New("skipped")

// claimOne takes j's run lock and applies take to it (the caller holds
// the store's lock and writes j back).
func (s *Store) claimOne(j *Job, take func(*Job) error) (Claimed, error) {
	unlock, err := s.runLock(j.ID)
	if err != nil {
		return Claimed{}, err
	}
	c := *j
	if err := take(&c); err != nil {
		unlock()
		return Claimed{}, fmt.Errorf("%w: %w", errSkipped, err)
	}
	*j = c
	return Claimed{Job: c, Release: unlock}, nil
}

func (s *Store) runLock(id string) (func(), error) {
	dir := filepath.Join(s.dir, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return flock(filepath.Join(dir, id+".lock"), false)
}

// locked runs fn on the jobs under the store's lock and writes them back
// when fn reports a change.
func (s *Store) locked(fn func(jobs *[]Job) (changed bool, err error)) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.dir, err)
	}
	unlock, err := flock(filepath.Join(s.dir, ".jobs.lock"), true)
	if err != nil {
		return err
	}
	defer unlock()
	jobs, err := s.read()
	if err != nil {
		return err
	}
	changed, err := fn(&jobs)
	if err != nil || !changed {
		return err
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].CreatedAt.Before(jobs[b].CreatedAt) })
	b, err := json.MarshalIndent(map[string]any{"jobs": jobs}, "", "  ")
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(s.jobsPath(), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", s.jobsPath(), err)
	}
	return nil
}

func (s *Store) read() ([]Job, error) {
	b, err := os.ReadFile(s.jobsPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f struct {
		Jobs []Job `json:"jobs"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (%v); fix or remove it", s.jobsPath(), err)
	}
	return f.Jobs, nil
}

// Find returns the index of the job whose id, unique id prefix or name is
// ref (ErrNotFound when none; an ambiguous prefix is an error).
func Find(jobs []Job, ref string) (int, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return -1, fmt.Errorf("give a cron job id or name (see `hermes cron list`)")
	}
	match := -1
	for i, j := range jobs {
		if j.ID == ref || j.Name == ref {
			return i, nil
		}
		if strings.HasPrefix(j.ID, ref) {
			if match >= 0 {
				return -1, fmt.Errorf("cron job id prefix %q is ambiguous; give more of the id", ref)
			}
			match = i
		}
	}
	if match < 0 {
		return -1, fmt.Errorf("%q: %w", ref, ErrNotFound)
	}
	return match, nil
}

// deliverTarget matches "<platform>:<chat_id>[:<thread_id>]".
var deliverTarget = lazyregexp.New(`^[a-z][a-z0-9_]*:[^:\s]+(:[^:\s]+)?$`)

func (j Job) validate() error {
	if strings.TrimSpace(j.Prompt) == "" {
		return errors.New("a cron job needs a prompt")
	}
	if _, err := ParseSchedule(j.Schedule); err != nil {
		return err
	}
	switch {
	case j.Deliver == "local", j.Deliver == "origin":
	case deliverTarget().MatchString(j.Deliver):
	default:
		return fmt.Errorf("deliver %q: use local, origin or <platform>:<chat_id> (e.g. telegram:123456)", j.Deliver)
	}
	for _, s := range j.Skills {
		if strings.TrimSpace(s) == "" || strings.Contains(s, "..") {
			return fmt.Errorf("skill name %q is not valid", s)
		}
	}
	return nil
}

// defaultName is the first words of the prompt.
func defaultName(prompt string) string {
	words := strings.Fields(prompt)
	if len(words) > 6 {
		words = words[:6]
	}
	name := strings.Join(words, " ")
	if len(name) > 48 {
		name = name[:48]
	}
	return name + " " + newID()[:4]
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// flock takes an exclusive flock(2) on path (created 0600). With wait
// false it fails with errBusy when another holder has it. The lock goes
// with the process, so a crashed holder never leaves it stale.
func flock(path string, wait bool) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errBusy
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

var errBusy = errors.New("locked by another run")
