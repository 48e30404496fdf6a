package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/conformance"

	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// testServer is a real OpenSSH server on loopback with throwaway keys.
type testServer struct {
	port       int
	clientKey  string // private key file
	knownHosts string
	hostPub    ssh.PublicKey
}

func writeKey(t *testing.T, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// startSSHD starts sshd as root on a free loopback port, with extra lines
// of sshd_config; it skips without root or sshd (CI installs
// openssh-server).
func startSSHD(t *testing.T, extra ...string) *testServer {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
		if _, err := os.Stat(sshd); err != nil {
			t.Skip("sshd not installed (apt-get install openssh-server)")
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("the ssh backend test runs sshd, which needs root")
	}
	dir := t.TempDir()
	hostPub := writeKey(t, filepath.Join(dir, "host_key"))
	clientPub := writeKey(t, filepath.Join(dir, "client_key"))
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		t.Fatal(err)
	}
	port := testnet.FreePort(t)
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s/host_key
AuthorizedKeysFile %s/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile %s/sshd.pid
MaxSessions 100
MaxStartups 100
`, port, dir, dir, dir) + strings.Join(extra, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll("/run/sshd", 0o755) // privilege separation directory
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sshd log:\n%s", log.String())
		}
	})
	for deadline := waitfor.Deadline(t); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen: %s", log.String())
		}
	}
	known := filepath.Join(dir, "known_hosts")
	line := fmt.Sprintf("[127.0.0.1]:%d %s", port, ssh.MarshalAuthorizedKey(hostPub))
	if err := os.WriteFile(known, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testServer{port: port, clientKey: filepath.Join(dir, "client_key"), knownHosts: known, hostPub: hostPub}
}

func (s *testServer) config(t *testing.T, workdir string) Config {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Host: "127.0.0.1", User: u.Username, Port: s.port, KeyFile: s.clientKey, KnownHosts: s.knownHosts,
		Workdir: workdir, HomeDir: t.TempDir()}
}

func TestConformance(t *testing.T) {
	srv := startSSHD(t)
	work := t.TempDir()
	// KeepsDetached: the remote host is a machine of the user's, as with
	// the local backend (see Environment.Close).
	conformance.Run(t, conformance.Target{KeepsDetached: true, Open: func(t *testing.T) backend.Backend {
		b, err := New(srv.config(t, work))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}})
}

// A remote shell whose startup prints (a .bashrc read by bash under sshd:
// pyenv's rehash printed lock errors on stderr) took the working
// directory's resolution and each command's process-group line with it:
// TestConformance failed with "workdir rm: cannot remove …\npyenv: cannot
// rehash … does not exist". The noise is now skipped.
func TestNoisyRemoteShellStartup(t *testing.T) {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if shell, _ := exec.Command("getent", "passwd", u.Username).Output(); !strings.HasSuffix(strings.TrimSpace(string(shell)), "/bash") {
		t.Skipf("%s's shell is not bash, which reads BASH_ENV: %s", u.Username, shell)
	}
	noisy := filepath.Join(t.TempDir(), "noisy.sh")
	if err := os.WriteFile(noisy, []byte("echo 'rm: cannot remove x' >&2\necho 'pyenv: cannot rehash' >&2\necho 'hello from bashrc'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startSSHD(t, "SetEnv BASH_ENV="+noisy)
	work := t.TempDir()
	b, err := New(srv.config(t, work))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env, err := b.Open(context.Background(), "noisy")
	if err != nil {
		t.Fatal(err)
	}
	if got := env.Workdir(); got != work {
		t.Fatalf("workdir %q, want %q", got, work)
	}
	res, err := env.Exec(context.Background(), backend.ExecRequest{Command: "pwd; echo done"})
	if err != nil || res.ExitCode != 0 || !strings.HasSuffix(strings.TrimSpace(string(res.Output)), work+"\ndone") {
		t.Fatalf("exec: %v %+v", err, res)
	}
}

// A user without ~/.ssh/known_hosts (often without ~/.ssh) gets a command
// that works as given: run it, and the backend connects.
func TestMissingKnownHostsFixWorks(t *testing.T) {
	srv := startSSHD(t)
	cfg := srv.config(t, "")
	cfg.KnownHosts = filepath.Join(t.TempDir(), "no-such-dir", "known_hosts")
	b, _ := New(cfg)
	_, err := b.Open(context.Background(), "t")
	if err == nil {
		t.Fatal("a missing known_hosts must be refused")
	}
	msg := err.Error()
	if strings.Count(msg, cfg.KnownHosts) > 2 {
		t.Errorf("the path is repeated: %s", msg)
	}
	start, end := strings.Index(msg, "`"), strings.LastIndex(msg, "`")
	if start < 0 || end <= start {
		t.Fatalf("no command in %q", msg)
	}
	if out, err := exec.Command("sh", "-c", msg[start+1:end]).CombinedOutput(); err != nil {
		t.Fatalf("the suggested command %q failed: %v\n%s", msg[start+1:end], err, out)
	}
	b, _ = New(cfg)
	defer b.Close()
	if _, err := b.Open(context.Background(), "t"); err != nil {
		t.Fatalf("after the suggested command: %v", err)
	}
}

// An unknown host key is refused with the command that adds it, and a
// changed key is refused outright: no trust on first use.
func TestHostKeyChecked(t *testing.T) {
	srv := startSSHD(t)
	cfg := srv.config(t, "")
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.KnownHosts = empty
	b, _ := New(cfg)
	_, err := b.Open(context.Background(), "t")
	if err == nil || !strings.Contains(err.Error(), "ssh-keyscan") {
		t.Fatalf("unknown host: %v", err)
	}
	other := writeKey(t, filepath.Join(t.TempDir(), "k"))
	line := fmt.Sprintf("[127.0.0.1]:%d %s", srv.port, ssh.MarshalAuthorizedKey(other))
	if err := os.WriteFile(empty, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ = New(cfg)
	_, err = b.Open(context.Background(), "t")
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("changed host key: %v", err)
	}
}

func TestNewNeedsHostAndUser(t *testing.T) {
	if _, err := New(Config{Host: "h"}); err == nil || !strings.Contains(err.Error(), "terminal.ssh_user") {
		t.Fatalf("got %v", err)
	}
}
