package approval

import "testing"

// FuzzCheck: the classifier never panics, and a command it cannot parse is
// never allowed unasked.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		"printf", "printf -v", "read", "xargs", "xargs -I", "find -exec", "sed -i", "tar", "env -S", "su -c", "git -c",
		"hermes config set", "curl -o", "cd", "chmod", "`echo rm` -rf /", "$'\\x72m' -rf /", "sh -c", "eval", "trap",
		"a=(1 2); ${a[0]}", "for x; do $x; done", "echo 'rm -rf /' | sh", "bash <<< x", "awk -f", "perl -i -pe", "x=$((1+2))",
	} {
		f.Add(seed, "")
	}
	s := bypassService()
	f.Fuzz(func(t *testing.T, cmd, workdir string) {
		v := s.CheckRequest(Request{Command: cmd, Workdir: workdir})
		_ = s.CheckRequest(Request{Command: cmd, Target: "bash"})
		_ = s.CheckRequest(Request{Command: cmd, Target: "python3 -i"})
		if v.Action == Allow && !analyze(cmd, s.paths, s.workdir(Request{Workdir: workdir})).parsed {
			t.Fatalf("unparseable %q allowed", cmd)
		}
	})
}
