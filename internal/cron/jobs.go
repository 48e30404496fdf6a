package cron

import (
	"fmt"
	"time"
)

// Jobs keeps cron jobs, their per-job run locks and the run ledger. Two
// implementations pass one conformance suite (cron/conformance): Store,
// files under HERMES_HOME/cron (database.backend: sqlite), and the tables
// of internal/store/postgres (database.backend: postgres), where the
// schedulers of every replica share the jobs and a job runs once across
// them. Output files stay per machine, under Dir.
type Jobs interface {
	// Dir is HERMES_HOME/cron on this machine (run output files).
	Dir() string
	// Now is the store's clock.
	Now() time.Time
	// List returns the jobs sorted by creation time.
	List() ([]Job, error)
	// Get returns the job whose id, unique id prefix or name is ref
	// (ErrNotFound when none).
	Get(ref string) (Job, error)
	// Add stores a new job (see Prepare); a second job with the same name
	// is an error naming the first (NameTaken).
	Add(j Job) (Job, error)
	// Update applies fn to the job ref names and stores the result (see Apply).
	Update(ref string, fn func(*Job) error) (Job, error)
	// Remove deletes the job ref names and returns it.
	Remove(ref string) (Job, error)
	// Claim takes jobs for a run, each holding its run lock until its
	// Release. With ref "" it takes every job due at now (Job.Due) whose
	// run lock is free: no other claimer, in this process or another,
	// takes the same job for the same due time. With ref a job name or id
	// it takes that job, or fails with RunningError when its run lock is
	// held. take sees each job with its run lock held and changes it (an
	// error skips the job, unchanged); changed jobs are stored before
	// Claim returns.
	Claim(now time.Time, ref string, take func(*Job) error) ([]Claimed, error)
	// AppendRun adds r to the run ledger.
	AppendRun(r Run) error
	// Runs returns the last n runs of the ledger (all with n <= 0), oldest first.
	Runs(n int) ([]Run, error)
}

// Claimed is a job taken by Claim; Release frees its run lock.
type Claimed struct {
	Job     Job
	Release func()
}

// RunningError is the error of claiming job j by name while it runs.
func RunningError(j Job) error {
	return fmt.Errorf("cron job %s (%s) is running in another process; try again when it is done", j.Name, j.ID)
}

// NameTaken is the error of adding a job named like job other.
func NameTaken(other Job) error {
	return fmt.Errorf("a cron job named %q exists (id %s); pick another --name or edit it", other.Name, other.ID)
}

// Prepare validates a new job (schedule, deliver, prompt) and gives it an
// id, creation time now, first run time and a default name. A Deliver of
// "" means "local", or "origin" when the job has an Origin.
func Prepare(j Job, now time.Time) (Job, error) {
	if j.Deliver == "" {
		j.Deliver = "local"
		if j.Origin != "" {
			j.Deliver = "origin"
		}
	}
	if err := j.validate(); err != nil {
		return Job{}, err
	}
	sched, _ := ParseSchedule(j.Schedule)
	j.ID = newID()
	j.CreatedAt = now
	j.NextRunAt = FirstRun(sched, j.CreatedAt)
	if j.Name == "" {
		j.Name = defaultName(j.Prompt)
	}
	return j, nil
}

// Apply applies fn to a copy of j and validates the result; a changed
// schedule recomputes the next run from now.
func Apply(j Job, fn func(*Job) error, now time.Time) (Job, error) {
	before := j.Schedule
	if err := fn(&j); err != nil {
		return Job{}, err
	}
	if err := j.validate(); err != nil {
		return Job{}, err
	}
	if j.Schedule != before {
		sched, _ := ParseSchedule(j.Schedule)
		j.NextRunAt = FirstRun(sched, now)
	}
	return j, nil
}

// Due reports whether j is due at now: not paused, not done, and its next
// run not after now.
func (j Job) Due(now time.Time) bool { return !j.Paused && !j.Done() && !j.NextRunAt.After(now) }
