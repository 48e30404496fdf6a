package initproc

import (
	"io"
	"slices"
	"testing"
)

// sudo(8)'s common spellings parse to the command they run (SudoMain).
func TestParseSudoArgs(t *testing.T) {
	for _, c := range []struct {
		args        []string
		argv        []string
		all, login  bool
		shell, none bool
		fails       bool
	}{
		{args: []string{"apt-get", "install", "-y", "jq"}, argv: []string{"apt-get", "install", "-y", "jq"}},
		{args: []string{"-n", "-E", "-u", "root", "--", "id", "-u"}, argv: []string{"id", "-u"}, all: true},
		{args: []string{"-nE", "-uroot", "id"}, argv: []string{"id"}, all: true},
		{args: []string{"--user=0", "--preserve-env", "sh", "-c", "echo $HOME"}, argv: []string{"sh", "-c", "echo $HOME"}, all: true},
		{args: []string{"-i"}, login: true},
		{args: []string{"-s", "ls", "-l"}, argv: []string{"ls", "-l"}, shell: true},
		{args: []string{"FOO=1", "env"}, argv: []string{"env"}},
		{args: []string{"-k"}, none: true},
		{args: []string{"-v"}, none: true},
		{args: []string{"-u", "nobody", "id"}, fails: true},
		{args: []string{"-g"}, fails: true},
		{args: []string{"-x", "id"}, fails: true},
		{args: []string{}, fails: true},
	} {
		o, code, done := parseSudoArgs(c.args, io.Discard)
		if c.fails {
			if !done || code != 1 {
				t.Errorf("%q: want a usage error, got %+v", c.args, o)
			}
			continue
		}
		if done || !slices.Equal(o.argv, c.argv) && len(c.argv) > 0 || o.preserveAll != c.all || o.login != c.login || o.shell != c.shell || o.noCommand != c.none {
			t.Errorf("%q: %+v (done %v)", c.args, o, done)
		}
	}
	if got := shellArgv("/bin/bash", true, []string{"echo", "a b;c", "$HOME"}); !slices.Equal(got, []string{"/bin/bash", "-l", "-c", `echo a\ b\;c $HOME`}) {
		t.Errorf("sudo -i echo ...: %q", got)
	}
}
