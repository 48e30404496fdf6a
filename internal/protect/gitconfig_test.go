package protect

import (
	"strings"
	"testing"
)

func TestCodeRunningKeys(t *testing.T) {
	for _, c := range []struct {
		config string
		want   string // joined with "|"
	}{
		{"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tlogallrefupdates = true\n[user]\n\tname = u\n", ""},
		{"[core]\n\tfsmonitor = \"touch /tmp/x\"\n", `core.fsmonitor="touch /tmp/x"`},
		{"[core] fsmonitor = evil", "core.fsmonitor=evil"},
		{"[Core]\n\tFSMonitor = evil\n", "core.fsmonitor=evil"},
		{"[core]\n\tfsmonitor = true\n\tfsmonitor = false\n", ""},
		{"[core]\nhooksPath = /tmp\npager = less\neditor=vim\nsshCommand = ssh -i k\naskPass=x\ngitProxy=x\n",
			"core.askpass=x|core.editor=vim|core.gitproxy=x|core.hookspath=/tmp|core.pager=less|core.sshcommand=ssh -i k"},
		{"[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\trequired = true\n", "filter.lfs.clean=git-lfs clean -- %f"},
		{"[filter.lfs]\n\tsmudge = x\n", "filter.lfs.smudge=x"},
		{"[diff \"pdf\"]\n\ttextconv = pdftotext\n[diff]\n\texternal = d\n", "diff.external=d|diff.pdf.textconv=pdftotext"},
		{"[include]\n\tpath = ../x\n[includeIf \"gitdir:/a/\"]\n\tpath = y\n", "include.path=../x|includeif.gitdir:/a/.path=y"},
		{"[alias]\n\tst = status\n\tx = !sh -c evil\n", "alias.x=!sh -c evil"},
		{"[credential]\n\thelper = store\n[hook \"pre-commit\"]\n\tcommand = x\n", "credential.helper=store|hook.pre-commit.command=x"},
		{"\xef\xbb\xbf[core]\r\n\tpager = x\r\n", "core.pager=x"},
		{"# [core]\n; fsmonitor = x\n", ""},
		// A continued value is read again as a key line: reported, never missed.
		{"[user]\n\tname = a \\\n fsmonitor = x\n[core]\n", ""},
		{"[core]\n\tname = a \\\n fsmonitor = x\n", "core.fsmonitor=x"},
	} {
		got := strings.Join(CodeRunningKeys([]byte(c.config)), "|")
		if got != c.want {
			t.Errorf("CodeRunningKeys(%q) = %q, want %q", c.config, got, c.want)
		}
	}
}
