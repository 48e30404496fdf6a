// Package doctor diagnoses a hermes installation (`hermes doctor`): each
// check reports ✓ (fine), ⚠ (works, but worth a look) or ✗ (broken), with
// the fix for anything not fine. With Env.Fix set, checks repair what is
// safe to repair (file modes, missing directories) and say so.
package doctor

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/skills"
)

// Status is the outcome of one check.
type Status int

// Statuses, in increasing severity.
const (
	OK   Status = iota // ✓
	Skip               // – not applicable or skipped (--offline)
	Warn               // ⚠
	Fail               // ✗
)

// Symbol is the mark printed before a result.
func (s Status) Symbol() string {
	switch s {
	case OK:
		return "✓"
	case Warn:
		return "⚠"
	case Fail:
		return "✗"
	}
	return "–"
}

// Result is one finding. Fix says what to do about a Warn or Fail (empty
// for OK); Fixed is set when --fix repaired it (Status is then OK).
type Result struct {
	Status Status
	Name   string // short label: "config", ".env permissions", "cgroup controllers"
	Detail string // what was found, naming the file, key or value
	Fix    string
	Fixed  bool
}

// Env is what checks look at. Tests point the paths at fakes.
type Env struct {
	// Home is HERMES_HOME.
	Home string
	// Executable is the running hermes binary ("" skips the box init
	// check).
	Executable string
	// Config is the loaded configuration, nil when it failed to load
	// (ConfigErr then says why).
	Config    *config.Loaded
	ConfigErr error
	// Skills is the skill library to check; nil skips the skills check.
	Skills *skills.Library
	// Fix repairs safe problems (modes, missing directories).
	Fix bool
	// Offline skips every network check.
	Offline bool
	// HTTPClient is used for provider checks (nil: http.DefaultClient).
	HTTPClient *http.Client
	// Timeout bounds each network check (0: 10 s).
	Timeout time.Duration
	// CgroupRoot is the cgroup filesystem root ("" = /sys/fs/cgroup).
	CgroupRoot string
	// CgroupProbe creates and removes a box cgroup as this user (nil:
	// box.ProbeCgroup when CgroupRoot is "", else no probe).
	CgroupProbe func() error
	// ProcRoot is procfs ("" = /proc).
	ProcRoot string
	// Geteuid returns the effective user id (nil: os.Geteuid).
	Geteuid func() int
	// LandlockABI returns the kernel's Landlock ABI version, 0 or an error
	// when Landlock is unavailable (nil: ask the kernel).
	LandlockABI func() (int, error)
}

// Check is one named diagnosis. Run returns one or more results.
type Check struct {
	Name string
	Run  func(ctx context.Context, e *Env) []Result
}

// Checks returns the standard checks in the order they are printed:
// config, HERMES_HOME, session store, provider, skills, web tools, then the box's
// kernel requirements (these report Skip unless terminal.backend is box).
// Callers append their own checks (a leftover-cgroup sweeper, the local
// guard's status) to the returned slice before Run.
func Checks() []Check {
	return []Check{
		{"config", checkConfig},
		{"home", checkHome},
		{"state", checkStore},
		{"provider", checkProvider},
		{"skills", checkSkills},
		{"web", checkWeb},
		{"box", checkBox},
		{"local", checkLocal},
	}
}

// Run runs checks in order and returns every result.
func Run(ctx context.Context, e *Env, checks []Check) Report {
	var r Report
	for _, c := range checks {
		r.Results = append(r.Results, c.Run(ctx, e)...)
	}
	return r
}

// Report is the outcome of a doctor run.
type Report struct{ Results []Result }

// Failed reports whether any result is ✗ (the run then exits 1).
func (r Report) Failed() bool {
	for _, x := range r.Results {
		if x.Status == Fail {
			return true
		}
	}
	return false
}

// Write prints one line per result, the fix indented below it, and a
// summary line.
func (r Report) Write(w io.Writer) {
	var warn, fail, fixed int
	for _, x := range r.Results {
		line := fmt.Sprintf("%s %s", x.Status.Symbol(), x.Name)
		if x.Detail != "" {
			line += ": " + x.Detail
		}
		if x.Fixed {
			line += " (fixed)"
			fixed++
		}
		fmt.Fprintln(w, line)
		if x.Fix != "" && (x.Status == Warn || x.Status == Fail) {
			fmt.Fprintln(w, "    fix:", x.Fix)
		}
		switch x.Status {
		case Warn:
			warn++
		case Fail:
			fail++
		}
	}
	fmt.Fprintf(w, "%d problem(s), %d warning(s)", fail, warn)
	if fixed > 0 {
		fmt.Fprintf(w, ", %d fixed", fixed)
	}
	fmt.Fprintln(w)
}

func (e *Env) cgroupRoot() string {
	if e.CgroupRoot != "" {
		return e.CgroupRoot
	}
	return "/sys/fs/cgroup"
}

func (e *Env) procRoot() string {
	if e.ProcRoot != "" {
		return e.ProcRoot
	}
	return "/proc"
}

func (e *Env) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return 10 * time.Second
}
