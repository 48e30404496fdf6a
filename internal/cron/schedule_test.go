package cron

import (
	"strings"
	"testing"
	"time"
)

func date(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04", s, time.Local)
	if err != nil {
		panic(err)
	}
	return t
}

// nextN returns the next n run times after from.
func nextN(t *testing.T, expr string, from time.Time, n int) []string {
	t.Helper()
	s, err := ParseSchedule(expr)
	if err != nil {
		t.Fatalf("ParseSchedule(%q): %v", expr, err)
	}
	var out []string
	for i := 0; i < n; i++ {
		from = s.Next(from)
		out = append(out, from.Format("Mon 2006-01-02 15:04"))
	}
	return out
}

func TestScheduleVixieDayOfMonthOrDayOfWeek(t *testing.T) {
	// "the 13th, and every Friday": both day fields restricted, so a day
	// matching EITHER runs (Vixie cron, crontab(5)).
	got := nextN(t, "0 9 13 * 5", date("2026-03-01 00:00"), 5)
	want := []string{
		"Fri 2026-03-06 09:00", "Fri 2026-03-13 09:00", "Fri 2026-03-20 09:00",
		"Fri 2026-03-27 09:00", "Fri 2026-04-03 09:00",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("0 9 13 * 5:\n got %v\nwant %v", got, want)
	}
	got = nextN(t, "0 9 1,15 * 1", date("2026-06-01 10:00"), 4)
	want = []string{"Mon 2026-06-08 09:00", "Mon 2026-06-15 09:00", "Mon 2026-06-22 09:00", "Mon 2026-06-29 09:00"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("0 9 1,15 * 1:\n got %v\nwant %v", got, want)
	}
	got = nextN(t, "0 9 1,15 * 1", date("2026-06-29 10:00"), 2)
	want = []string{"Wed 2026-07-01 09:00", "Mon 2026-07-06 09:00"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("0 9 1,15 * 1 across the month:\n got %v\nwant %v", got, want)
	}
}

func TestScheduleStarStepDayIsUnrestricted(t *testing.T) {
	// Vixie cron treats a day field starting with "*" as unrestricted even
	// with a step, and then ANDs the day fields: "*/2" days that are
	// Mondays. A library that ignored the leading "*" would OR them
	// (every odd day and every Monday).
	got := nextN(t, "0 0 */2 * 1", date("2026-06-01 01:00"), 3)
	want := []string{"Mon 2026-06-15 00:00", "Mon 2026-06-29 00:00", "Mon 2026-07-13 00:00"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("0 0 */2 * 1:\n got %v\nwant %v", got, want)
	}
	// Only the day of week restricted: that day only.
	got = nextN(t, "30 8 * * 2", date("2026-06-01 00:00"), 2)
	want = []string{"Tue 2026-06-02 08:30", "Tue 2026-06-09 08:30"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("30 8 * * 2:\n got %v\nwant %v", got, want)
	}
}

func TestScheduleIntervals(t *testing.T) {
	from := date("2026-01-01 00:00")
	for expr, want := range map[string]time.Duration{
		"every 30m": 30 * time.Minute, "30m": 30 * time.Minute, "every 2h": 2 * time.Hour,
		"1d": 24 * time.Hour, "Every 1h30m": 90 * time.Minute,
	} {
		s, err := ParseSchedule(expr)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		if got := s.Next(from).Sub(from); got != want {
			t.Errorf("%q: next after %s, want %s", expr, got, want)
		}
	}
	s, err := ParseSchedule("in 45m")
	if err != nil {
		t.Fatal(err)
	}
	if got := FirstRun(s, from); !got.Equal(from.Add(45 * time.Minute)) {
		t.Errorf("in 45m: first run %s", got)
	}
	if !s.Next(from.Add(time.Hour)).IsZero() {
		t.Error("a one-shot schedule runs again")
	}
}

func TestScheduleErrorsNameTheSchedule(t *testing.T) {
	for _, bad := range []string{"", "every", "every 10s", "0 9 * *", "61 * * * *", "every 5x", "tomorrow"} {
		_, err := ParseSchedule(bad)
		if err == nil {
			t.Errorf("ParseSchedule(%q) = nil error", bad)
			continue
		}
		if bad != "" && !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseSchedule(%q): error %q does not name the schedule", bad, err)
		}
	}
}

func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"0 9 13 * 5", "every 30m", "in 2h", "*/5 * * * *", "@daily", "1d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sched, err := ParseSchedule(s)
		if err != nil {
			return
		}
		from := date("2026-01-01 00:00")
		if next := sched.Next(from); !next.IsZero() && !next.After(from) {
			t.Fatalf("%q: next %s is not after %s", s, next, from)
		}
	})
}
