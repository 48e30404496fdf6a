package protect

import (
	"strings"
	"testing"
)

func TestUnapprovedKeys(t *testing.T) {
	for _, c := range []struct {
		config string
		want   string // joined with "|"
	}{
		// What git init and git clone write passes.
		{"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n" +
			"[remote \"origin\"]\n\turl = https://example.com/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
			"[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = u\n\temail = u@x ; c\n", ""},
		{"[remote \"o\"]\n\turl = git@host:r.git\n[submodule \"m\"]\n\turl = ../m.git\n\tactive = true\n", ""},
		{"# [core]\n; fsmonitor = x\n\n", ""},
		{"[core]\n\tfsmonitor = \"touch /tmp/x\"\n", `core.fsmonitor="touch /tmp/x"`},
		{"[core] fsmonitor = evil", "core.fsmonitor=evil"},
		{"[Core]\n\tFSMonitor = evil\n", "core.fsmonitor=evil"},
		{"[filter.lfs]\n\tsmudge = x\n", "filter.lfs.smudge=x"},
		{"\xef\xbb\xbf[core]\r\n\tpager = x\r\n", "core.pager=x"},
		{"[core]\n\tautocrlf\n", "core.autocrlf"},
		// F1: git joins a line ending in `\` with the next, so "[foo]" is
		// part of a value and fsmonitor lands in [core].
		{"[core]\n\tx = a\\\n[foo]\n\tfsmonitor = \"echo PWNED-A >&2; false\"\n",
			`foo.fsmonitor="echo PWNED-A >&2; false"|line 2: a value continued on the next line or with an escape hermes does not understand: "\tx = a\\"`},
		// F2: a "]" inside a quoted subsection.
		{"[filter \"x]\"] clean = \"echo PWNED-B >&2; cat\"\n", `filter.x].clean="echo PWNED-B >&2; cat"`},
		{"[filter \"x\\\"y\"]\n\tclean = c\n", `?.clean=c|line 1: a section header hermes does not understand: "[filter \"x\\\"y\"]"`},
		{"[core x]\n", `line 1: a section header hermes does not understand: "[core x]"`},
		{"[core]\n\tx.y = 1\n", `line 2: a line hermes does not understand: "\tx.y = 1"`},
		// F3: keys a denylist missed.
		{"[gpg \"ssh\"]\n\tdefaultKeyCommand = echo PWNED-C\n[commit]\n\tgpgsign = true\n[gpg]\n\tformat = ssh\n" +
			"[remote \"origin\"]\n\turl = ext::sh -c echo% PWNED-C2>&2\n[protocol \"ext\"]\n\tallow = always\n",
			"commit.gpgsign=true|gpg.format=ssh|gpg.ssh.defaultkeycommand=echo PWNED-C|protocol.ext.allow=always|remote.origin.url=ext::sh -c echo% PWNED-C2>&2"},
		{"[url \"ext::sh -c x\"]\n\tinsteadOf = https://\n\tpushInsteadOf = git@\n[remote \"o\"]\n\tpushurl = fd::3\n\turl = -oProxyCommand=x\n" +
			"[trailer \"t\"]\n\tcommand = x\n\tcmd = y\n",
			"remote.o.pushurl=fd::3|remote.o.url=-oProxyCommand=x|trailer.t.cmd=y|trailer.t.command=x|url.ext::sh -c x.insteadof=https://|url.ext::sh -c x.pushinsteadof=git@"},
		{"[remote \"o\"]\n\turl = \"ext::sh\"\n", `remote.o.url="ext::sh"`},
		{"[remote \"o\"]\n\turl = foo::bar\n", "remote.o.url=foo::bar"},
	} {
		got := strings.Join(UnapprovedKeys([]byte(c.config)), "|")
		if got != c.want {
			t.Errorf("UnapprovedKeys(%q)\n got %q\nwant %q", c.config, got, c.want)
		}
	}
}
