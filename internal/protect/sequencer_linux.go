package protect

import (
	"errors"
	"fmt"
	"hash/fnv"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// todoFiles are the to-do lists git runs the `exec` lines of when the
// user continues an interrupted rebase (`git rebase --continue`) or
// cherry-pick/revert sequence (git-rebase(1), sequencer.c).
var todoFiles = []string{"rebase-merge/git-rebase-todo", "sequencer/todo"}

// sequencerTodos checks the to-do lists of git directory fd (rel): one
// holding an exec line (`exec CMD`, `x CMD`) is a finding, identified by
// its content, so a list that was there at the start stays and a planted
// or rewritten one is moved aside.
func (sc *scanner) sequencerTodos(fd int, rel string) {
	for _, name := range todoFiles {
		dir, err := unix.Openat(fd, path.Dir(name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		data, err := readBounded(dir, path.Base(name), maxConfigSize)
		unix.Close(dir)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				sc.add(path.Join(rel, name), ".git/config", "a to-do list hermes cannot read: "+err.Error(), "todo-unreadable")
			}
			continue
		}
		if !hasExecLine(data) {
			continue
		}
		h := fnv.New64a()
		h.Write(data)
		sc.add(path.Join(rel, name), ".git/config", "a rebase or cherry-pick to-do list with exec lines, which `git rebase --continue` runs",
			fmt.Sprintf("todo:%x", h.Sum64()))
	}
}

// hasExecLine reports whether a to-do list holds an exec command (git
// accepts "exec" or "x", after leading spaces).
func hasExecLine(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		word, _, _ := strings.Cut(strings.TrimLeft(line, " \t"), " ")
		word, _, _ = strings.Cut(word, "\t")
		if word == "exec" || word == "x" {
			return true
		}
	}
	return false
}
