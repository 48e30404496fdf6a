// Package cron runs scheduled agent jobs, as Hermes Agent's cron does
// ("features/cron.md"): jobs with a cron expression or an interval, a
// prompt, optional skills and a delivery target, stored in
// HERMES_HOME/cron/jobs.json and run by the gateway's ticker or
// `hermes cron tick`. A job missed while nothing ticked runs once when
// ticking resumes, and a job never runs twice at once, even across
// processes (a flock(2) per job under HERMES_HOME/cron/locks).
package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/adhocore/gronx"
)

// Schedule says when a job runs next.
type Schedule interface {
	// Next returns the first run time strictly after t; the zero time
	// means never again.
	Next(t time.Time) time.Time
}

// minInterval is the shortest interval a job may use; the ticker runs
// every minute, as Hermes Agent's does.
const minInterval = time.Minute

// ParseSchedule parses a job's schedule:
//   - a standard 5-field cron expression ("0 9 * * 1-5") or a descriptor
//     (@hourly, @daily, @weekly, @monthly, @yearly), in local time, with
//     Vixie cron's day rule: when both day-of-month and day-of-week are
//     restricted (neither starts with "*"), a day matching EITHER runs;
//   - an interval: "every 30m", "every 2h", "30m", "1d" (units s, m, h, d;
//     at least one minute);
//   - a one-shot delay: "in 30m" (runs once, then the job is done).
//
// The error names the schedule and the accepted forms.
func ParseSchedule(s string) (Schedule, error) {
	text := strings.TrimSpace(s)
	lower := strings.ToLower(text)
	switch {
	case text == "":
		return nil, fmt.Errorf("empty schedule: give a cron expression (\"0 9 * * *\"), \"every 30m\" or \"in 2h\"")
	case strings.HasPrefix(lower, "every "):
		d, err := parseDuration(strings.TrimSpace(lower[len("every "):]))
		if err != nil {
			return nil, fmt.Errorf("schedule %q: %v", s, err)
		}
		return Every(d), nil
	case strings.HasPrefix(lower, "in "):
		d, err := parseDuration(strings.TrimSpace(lower[len("in "):]))
		if err != nil {
			return nil, fmt.Errorf("schedule %q: %v", s, err)
		}
		return Once(d), nil
	}
	if d, err := parseDuration(lower); err == nil {
		return Every(d), nil
	}
	if len(strings.Fields(text)) != 5 && !strings.HasPrefix(text, "@") {
		return nil, fmt.Errorf("schedule %q is neither a 5-field cron expression nor an interval like \"every 30m\"", s)
	}
	if !gronx.IsValid(text) {
		return nil, fmt.Errorf("schedule %q is not a valid cron expression (minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1-5\") nor an interval like \"every 30m\"", s)
	}
	return cronExpr(text), nil
}

// cronExpr is a 5-field cron expression evaluated by gronx
// (github.com/adhocore/gronx), which follows Vixie cron: when both day
// fields are restricted, a day matching either runs.
type cronExpr string

// Next returns the first minute strictly after t that matches.
func (c cronExpr) Next(t time.Time) time.Time {
	next, err := gronx.NextTickAfter(string(c), t, false)
	if err != nil {
		return time.Time{}
	}
	return next
}

// parseDuration reads "30m", "2h", "1d", "90s", "1h30m".
func parseDuration(s string) (time.Duration, error) {
	s = strings.ReplaceAll(s, " ", "")
	var total time.Duration
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) {
			return 0, fmt.Errorf("%q is not a duration like 30m, 2h or 1d", s)
		}
		n, err := strconv.ParseInt(rest[:i], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%q: %v", s, err)
		}
		unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[rest[i]]
		if unit == 0 {
			return 0, fmt.Errorf("%q: unknown unit %q (use s, m, h or d)", s, rest[i:i+1])
		}
		total += time.Duration(n) * unit
		rest = rest[i+1:]
	}
	if total < minInterval {
		return 0, fmt.Errorf("%q is shorter than the ticker's minute", s)
	}
	return total, nil
}

// Every is an interval schedule: the next run is one interval after t.
type Every time.Duration

// Next returns t plus the interval.
func (e Every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }

// Once is a one-shot delay ("in 30m"): a job's first run is the delay
// after its creation; Next after that is never (the zero time).
type Once time.Duration

// Next returns the zero time: a one-shot job runs once. The first run time
// comes from FirstRun.
func (Once) Next(time.Time) time.Time { return time.Time{} }

// FirstRun returns when a job created at created first runs.
func FirstRun(s Schedule, created time.Time) time.Time {
	if o, ok := s.(Once); ok {
		return created.Add(time.Duration(o))
	}
	return s.Next(created)
}
