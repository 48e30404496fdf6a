package protect

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runGit runs git in dir with a HOME of its own, failing the test on error.
func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

const someCommit = "1111111111111111111111111111111111111111"

// Gitlinks reads the index git writes in versions 2, 3 (an entry with
// extended flags) and 4 (prefix-compressed names).
func TestGitlinksReadsGitsIndex(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, version := range []string{"2", "3", "4"} {
		ws := t.TempDir()
		runGit(t, ws, "init", "-q")
		writeFiles(t, ws, map[string]string{"a/file": "x", "a/b/other": "y"})
		runGit(t, ws, "add", "a")
		runGit(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+someCommit+",a/b/sub")
		runGit(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+someCommit+",deep/er/mod")
		if version == "3" {
			runGit(t, ws, "update-index", "--skip-worktree", "a/file")
		}
		runGit(t, ws, "update-index", "--index-version", version)
		data, err := os.ReadFile(filepath.Join(ws, ".git/index"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Gitlinks(data, 20)
		if err != nil || !slices.Equal(got, []string{"a/b/sub", "deep/er/mod"}) {
			t.Errorf("index version %s: Gitlinks = %q, %v; want [a/b/sub deep/er/mod]", version, got, err)
		}
	}
	if _, err := Gitlinks([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05"), 20); err == nil {
		t.Error("a truncated index is not an error")
	}
}

// F6: when the walk is cut off, the gitlinks of the top-level index are
// still checked: a submodule below the depth bound gets no free pass.
func TestWatchChecksGitlinksBeyondTheBounds(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := t.TempDir()
	deep := strings.Repeat("d/", scanMaxDepth+2) + "mod"
	runGit(t, ws, "init", "-q")
	runGit(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+someCommit+","+deep)
	writeFiles(t, ws, map[string]string{deep + "/.git/config": "[core]\n\trepositoryformatversion = 0\n"})
	w := New(Defaults()).Watch(ws, true)
	w.WarnTo(&strings.Builder{})
	writeFiles(t, ws, map[string]string{deep + "/.git/config": "[core]\n\tfsmonitor = \"echo PWNED-F\"\n"})
	note := w.Check()
	if !strings.Contains(note, deep+"/.git/config"+Refused) {
		t.Errorf("the gitlink below the depth bound was not checked:\n%s", note)
	}
}

// Attacker trial 2 (issue 23), finding 4: the top repository gitlinks a,
// and a's own index gitlinks a repository 40 levels below it, under the
// walk's depth bound. The user's `git status` at the top recurses through
// both; so does the check, however deep the chain goes.
func TestWatchFollowsGitlinkChainsBelowTheDepthBound(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := t.TempDir()
	deep := strings.Repeat("x/", 40) + "deep"
	runGit(t, ws, "init", "-q")
	runGit(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+someCommit+",a")
	writeFiles(t, ws, map[string]string{"a/README": "a\n"})
	runGit(t, filepath.Join(ws, "a"), "init", "-q")
	runGit(t, filepath.Join(ws, "a"), "update-index", "--add", "--cacheinfo", "160000,"+someCommit+","+deep)
	writeFiles(t, ws, map[string]string{"a/" + deep + "/.git/config": "[core]\n\trepositoryformatversion = 0\n"})
	w := New(Defaults()).Watch(ws, true)
	w.WarnTo(&strings.Builder{})
	writeFiles(t, ws, map[string]string{"a/" + deep + "/.git/config": "[core]\n\tfsmonitor = \"touch /tmp/PWNED; false\"\n"})
	note := w.Check()
	if _, err := os.Lstat(filepath.Join(ws, "a", deep, ".git/config"+Refused)); err != nil {
		t.Errorf("the repository a's index gitlinks below the depth bound was not checked: %v\n%s", err, note)
	}
}

// Beyond the gitlinks a cut-off scan follows, a repository's config that
// changes is moved aside unchecked (fail closed); one that does not stays.
func TestWatchMovesAsideChangedConfigsBeyondTheGitlinkCount(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := t.TempDir()
	deep := strings.Repeat("d/", scanMaxDepth+2)
	runGit(t, ws, "init", "-q")
	for _, m := range []string{"m1", "m2"} {
		runGit(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+someCommit+","+deep+m)
		writeFiles(t, ws, map[string]string{deep + m + "/.git/config": "[core]\n\trepositoryformatversion = 0\n"})
	}
	w := New(Defaults()).Watch(ws, true)
	w.maxGitlinks = 1
	w.WarnTo(&strings.Builder{})
	writeFiles(t, ws, map[string]string{deep + "m2/.git/config": "[core]\n\trepositoryformatversion = 0\n\n"})
	note := w.Check()
	if _, err := os.Lstat(filepath.Join(ws, deep+"m2/.git/config"+Refused)); err != nil {
		t.Errorf("a changed config beyond the gitlink count stayed: %v\n%s", err, note)
	}
	if _, err := os.Lstat(filepath.Join(ws, deep+"m1/.git/config")); err != nil {
		t.Errorf("an unchanged, checked config was moved: %v\n%s", err, note)
	}
}
