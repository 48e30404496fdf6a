package sandboxserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeHost is a passwd file and a /proc with one process per uid given.
func fakeHost(t *testing.T, passwd string, procUIDs ...string) HostUIDs {
	t.Helper()
	dir := t.TempDir()
	h := HostUIDs{Passwd: filepath.Join(dir, "passwd"), Proc: filepath.Join(dir, "proc")}
	if err := os.WriteFile(h.Passwd, []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, uid := range procUIDs {
		p := filepath.Join(h.Proc, string(rune('1'+i)))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		status := "Name:\tsh\nUid:\t" + uid + "\t" + uid + "\t" + uid + "\t" + uid + "\nGid:\t0\t0\t0\t0\n"
		if err := os.WriteFile(filepath.Join(p, "status"), []byte(status), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

const rootOnly = "root:x:0:0:root:/root:/bin/sh\n"

// The attacker trial's F2: with a host account at uid 1000, sandbox
// commands must not run as uid 1000 (that account could read their
// /proc/PID/environ and files, and signal them).
func TestSandboxUserAvoidsHostAccountsAndProcesses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		host   HostUIDs
		want   int
		reason string
	}{
		{"free host", fakeHost(t, rootOnly), 1000, "E2B's"},
		{"host account 1000", fakeHost(t, rootOnly+"alice:x:1000:1000::/home/alice:/bin/bash\n"), 101000, `host account "alice"`},
		{"host process 1000", fakeHost(t, rootOnly, "0", "1000"), 101000, "host process"},
		{"1000 and 101000 taken", fakeHost(t, rootOnly+"alice:x:1000:1000::/home/alice:/bin/bash\n", "101000"), 101001, "alice"},
	} {
		uid, why, err := ChooseUserUID(tc.host, 0)
		if err != nil || uid != tc.want || !strings.Contains(why, tc.reason) {
			t.Errorf("%s: uid %d (%q), %v; want %d because of %s", tc.name, uid, why, err, tc.want, tc.reason)
		}
	}
	h := fakeHost(t, rootOnly+"alice:x:1000:1000::/home/alice:/bin/bash\n", "4242")
	if _, _, err := ChooseUserUID(h, 1000); err == nil || !strings.Contains(err.Error(), "alice") {
		t.Errorf("--user-uid 1000 with host account alice at 1000: %v, want refused", err)
	}
	if _, _, err := ChooseUserUID(h, 4242); err == nil || !strings.Contains(err.Error(), "process") {
		t.Errorf("--user-uid 4242 with a host process at 4242: %v, want refused", err)
	}
	if uid, _, err := ChooseUserUID(h, 5000); err != nil || uid != 5000 {
		t.Errorf("--user-uid 5000 (free): %d, %v", uid, err)
	}
}

// The server's default user runs as the uid it was given.
func TestServerDefaultUserHasConfiguredUID(t *testing.T) {
	s := &Server{user: newDefaultUser(101000)}
	if u := s.userOf(t.Context()); u.name != "user" || u.home != UserHome || u.as == nil || u.as.UID != 101000 || u.as.GID != 101000 {
		t.Fatalf("default user %+v %+v", u, u.as)
	}
}
