package box

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// fakeUserHome makes a home directory on the host's root file system (not
// under /tmp, which every box covers with its own tmpfs anyway) holding SSH
// and cloud credentials, with a project directory inside it, and makes it
// $HOME for the test.
func fakeUserHome(t *testing.T) (home, project string) {
	t.Helper()
	home, err := os.MkdirTemp("/", "hermes-test-userhome-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	for name, data := range map[string]string{
		".ssh/id_rsa":       "-----BEGIN OPENSSH PRIVATE KEY----- host-only-marker",
		".aws/credentials":  "aws_secret_access_key = host-only-marker",
		".git-credentials":  "https://user:host-only-marker@example.com",
		"notes.txt":         "private notes host-only-marker",
		"project/README.md": "project readme",
	} {
		p := filepath.Join(home, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	return home, filepath.Join(home, "project")
}

func TestEscapeReadUserHome(t *testing.T) {
	home, project := fakeUserHome(t)
	e := startTestBox(t, func(o *Options) { o.Terminal.Cwd = project })
	res := e.run(t, "cat "+home+"/.ssh/id_rsa "+home+"/.aws/credentials "+home+"/.git-credentials "+home+"/notes.txt")
	if strings.Contains(string(res.Output), "host-only-marker") || res.ExitCode == 0 {
		t.Fatalf("box read the user's home (exit %d): %s", res.ExitCode, res.Output)
	}
	if ls := e.run(t, "ls -A "+home); trimmed(ls) != "project" {
		t.Fatalf("the home shows more than the workspace's mount point: %q", ls.Output)
	}
	if data, err := e.env.ReadFile(context.Background(), filepath.Join(home, ".ssh/id_rsa")); err == nil {
		t.Fatalf("ReadFile of ~/.ssh/id_rsa succeeded: %q", data)
	}
	// the workspace inside that home is readable and writable, and writes reach the host
	if r := e.run(t, "cat README.md && echo from-box > made.txt"); trimmed(r) != "project readme" {
		t.Fatalf("workspace inside the home not readable: %q", r.Output)
	}
	if data, _ := os.ReadFile(filepath.Join(project, "made.txt")); string(data) != "from-box\n" {
		t.Fatalf("workspace write did not reach the host: %q", data)
	}
}

func TestEscapeReadCredentialsInWorkspaceHome(t *testing.T) {
	home, _ := fakeUserHome(t)
	e := startTestBox(t, func(o *Options) { o.Terminal.Cwd = home })
	res := e.run(t, "cat notes.txt; echo; cat .ssh/id_rsa .aws/credentials .git-credentials 2>&1")
	if !strings.Contains(string(res.Output), "private notes") {
		t.Fatalf("the workspace (the home itself) is not readable: %s", res.Output)
	}
	if strings.Count(string(res.Output), "host-only-marker") != 1 {
		t.Fatalf("credential files of a home used as the workspace are readable: %s", res.Output)
	}
}

func TestEscapeReadHostCredentialFiles(t *testing.T) {
	shadow, err := os.ReadFile("/etc/shadow")
	if err != nil || len(shadow) == 0 {
		t.Skip("this host has no readable /etc/shadow")
	}
	marker, err := os.CreateTemp("/root", "hermes-test-marker-")
	if err != nil {
		t.Skipf("cannot write to /root: %v", err)
	}
	marker.WriteString("host-only-marker")
	marker.Close()
	t.Cleanup(func() { os.Remove(marker.Name()) })
	e := startTestBox(t, nil)
	res := e.run(t, "cat /etc/shadow /etc/gshadow /etc/ssh/ssh_host_*_key 2>/dev/null; ls -A /root; cat "+marker.Name()+" 2>/dev/null")
	firstLine := strings.SplitN(string(shadow), "\n", 2)[0]
	if strings.Contains(string(res.Output), firstLine) || strings.Contains(string(res.Output), "PRIVATE KEY") ||
		strings.Contains(string(res.Output), "host-only-marker") || strings.Contains(string(res.Output), filepath.Base(marker.Name())) {
		t.Fatalf("box read host credentials or /root: %s", res.Output)
	}
	// the box's own /root stays writable, and the write stays in the box
	if r := e.run(t, "echo mine > /root/box-file && cat /root/box-file"); trimmed(r) != "mine" {
		t.Fatalf("/root not writable in the box: %q", r.Output)
	}
	if _, err := os.Stat("/root/box-file"); err == nil {
		os.Remove("/root/box-file")
		t.Fatal("a write to the box's /root reached the host")
	}
}

func TestLoginHomesFromPasswd(t *testing.T) {
	p := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(p, []byte("root:x:0:0:root:/root:/bin/bash\n"+
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"+
		"alice:x:1000:1000:Alice:/data/alice:/bin/bash\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"+
		"weird:x:1001:1001::/:/bin/sh\nbroken line\n"), 0o644)
	got := loginHomes(p)
	if len(got) != 1 || got[0] != "/data/alice" {
		t.Fatalf("login homes %q, want [/data/alice]", got)
	}
}

func TestPrivateHostPathsOnlyInHostMode(t *testing.T) {
	m := &Manager{opts: Options{Home: "/srv/hermes-home", UserHome: "/srv/alice"}}
	empty, hide := m.privateHostPaths([]string{"/"})
	for _, want := range []string{"/root", "/home", "/srv/alice"} {
		if !underAny(want, empty) {
			t.Errorf("host mode does not empty %s: %q", want, empty)
		}
	}
	if !slices.Contains(hide, "/srv/hermes-home") || !slices.Contains(hide, "/srv/alice/.ssh") {
		t.Errorf("host mode hides %q", hide)
	}
	empty, hide = m.privateHostPaths([]string{"/var/lib/images/debian"})
	if len(empty) != 0 || len(hide) != 1 || hide[0] != "/srv/hermes-home" {
		t.Errorf("an image base should only hide HERMES_HOME: empty %q hide %q", empty, hide)
	}
}

// TestPruneHiddenKeepsWhatTheWorkspaceShows: covering a host file under a
// directory the box sees empty is dropped (and repeats), but not when
// the workspace mount shows it (hermes run from ~: ~/.ssh is in sight).
func TestPruneHiddenKeepsWhatTheWorkspaceShows(t *testing.T) {
	empty := []string{"/root", "/home", "/var/log"}
	hide := []string{"/srv/hermes-home", "/root/.ssh", "/etc/shadow", "/root/.ssh", "/home/alice/.aws", "/var/lib/shells.state", "/etc/shadow"}
	got := pruneHidden(hide, empty, "/srv/project")
	if want := []string{"/srv/hermes-home", "/etc/shadow", "/var/lib/shells.state"}; !slices.Equal(got, want) {
		t.Errorf("pruneHidden = %q, want %q", got, want)
	}
	got = pruneHidden(append(hide, "/root/.hermes"), empty, "/root")
	if want := []string{"/srv/hermes-home", "/root/.ssh", "/etc/shadow", "/var/lib/shells.state", "/root/.hermes"}; !slices.Equal(got, want) {
		t.Errorf("pruneHidden with the workspace at /root = %q, want %q", got, want)
	}
}

// TestEscapeHomeMadeAfterFirstStart: a persistent box first started while
// the user's home did not exist yet; the host then makes it, with cloud
// credentials in it. At the next start the box must see that home empty,
// as a fresh box would, not through the record of its first start.
func TestEscapeHomeMadeAfterFirstStart(t *testing.T) {
	needBoxes(t)
	// A path under /opt, which host mode shows, so that making it does not
	// change the list of top-level directories the box shows empty.
	home, err := os.MkdirTemp("/opt", "hermes-test-later-home-")
	if err != nil {
		t.Skipf("cannot make a directory in /opt: %v", err)
	}
	must(t, os.Remove(home))
	t.Cleanup(func() { os.RemoveAll(home) })
	m := persistentTestManager(t, func(o *Options) { o.UserHome = home })
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	if _, err := m.Open(ctx, "later-home"); err != nil {
		t.Fatal(err)
	}
	must(t, m.Stop("later-home"))

	must(t, os.MkdirAll(filepath.Join(home, ".aws"), 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".aws", "credentials"), []byte("aws_secret_access_key = host-only-marker"), 0o600))
	must(t, os.WriteFile(filepath.Join(home, "notes.txt"), []byte("host-only-marker"), 0o600))
	e := openPlanted(t, m, "later-home")
	res := e.run(t, "cat "+home+"/.aws/credentials "+home+"/notes.txt 2>&1; echo; ls -A "+home+" 2>/dev/null")
	if out := string(res.Output); strings.Contains(out, "host-only-marker") || strings.Contains(out, "\n.aws\n") {
		t.Fatalf("the restarted box sees a home the host made after its first start: %s", out)
	}
}
