package cli

import "testing"

// A one-shot run raises GOGC (oneShotGCPercent) unless GOGC is set; an
// interactive session keeps the collector's default.
func TestOneShotGC(t *testing.T) {
	for _, c := range []struct {
		name     string
		o        chatOptions
		text     string
		terminal bool
		gogc     string
		want     int // 0: SetGCPercent not called
	}{
		{"-z", chatOptions{oneshotPrompt: "hi"}, "hi", true, "", oneShotGCPercent},
		{"-q piped", chatOptions{query: "hi"}, "hi", false, "", oneShotGCPercent},
		{"-q -Q on a terminal", chatOptions{query: "hi", quiet: true}, "hi", true, "", oneShotGCPercent},
		{"-q on a terminal (first turn of a session)", chatOptions{query: "hi"}, "hi", true, "", 0},
		{"REPL", chatOptions{}, "", true, "", 0},
		{"-z with GOGC set", chatOptions{oneshotPrompt: "hi"}, "hi", true, "50", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := 0
			a := &App{IsTerminal: c.terminal, Getenv: func(k string) string {
				if k == "GOGC" {
					return c.gogc
				}
				return ""
			}, SetGCPercent: func(p int) int { got = p; return 100 }}
			a.oneShotGC(&c.o, c.text)
			if got != c.want {
				t.Fatalf("SetGCPercent(%d), want %d", got, c.want)
			}
		})
	}
}
