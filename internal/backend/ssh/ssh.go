// Package ssh is the "ssh" terminal backend of Hermes Agent
// ("terminal-backends.md"): commands and file operations run on a remote
// host over SSH (golang.org/x/crypto/ssh), one connection shared by the
// tasks of a backend. As in Hermes: terminal.ssh_host and ssh_user are
// required (TERMINAL_SSH_HOST/USER), ssh_port defaults to 22, ssh_key
// names a private key (else the ssh-agent, else ~/.ssh/id_ed25519,
// id_ecdsa, id_rsa); the agent's provider keys are never sent.
//
// Unlike Hermes (StrictHostKeyChecking=accept-new) the host key must
// already be in known_hosts: an unknown host is an error that says how to
// add it, and a changed key is refused.
//
// Each command runs in its own SSH session (package shellexec); timeouts,
// Kill and Close end its process tree from a second session, since
// OpenSSH ignores most signal requests.
package ssh

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/shellexec"
	"github.com/hermes-go/hermes/internal/backend/shellfs"
)

// Kind is the terminal.backend name.
const Kind = "ssh"

// Config is where and as whom to connect.
type Config struct {
	Host string // terminal.ssh_host
	User string // terminal.ssh_user
	Port int    // terminal.ssh_port; 0 means 22
	// KeyFile is terminal.ssh_key, a private key file ("" = agent, then
	// the default key files).
	KeyFile string
	// KnownHosts is the known_hosts file (default ~/.ssh/known_hosts).
	KnownHosts string
	// Workdir is the remote working directory ("" = the remote home).
	Workdir string
	// HomeDir is the local home for ~ and the default files.
	HomeDir string
	// AgentSocket is SSH_AUTH_SOCK ("" = no agent).
	AgentSocket string
	// DialTimeout bounds connecting and the handshake (default 15s).
	DialTimeout time.Duration
}

// Backend connects lazily on the first Open and serves every task over
// that connection.
type Backend struct {
	cfg Config

	envs *backend.TaskEnvs[*shellexec.Environment]

	mu     sync.Mutex // guards client
	client *ssh.Client
}

// New checks cfg and returns a backend; it does not connect yet. The
// error names the missing setting and how to set it.
func New(cfg Config) (*Backend, error) {
	if cfg.Host == "" || cfg.User == "" {
		return nil, errors.New("terminal.backend ssh needs terminal.ssh_host and terminal.ssh_user (or TERMINAL_SSH_HOST and TERMINAL_SSH_USER): " +
			"`hermes config set terminal.ssh_host HOST` and `hermes config set terminal.ssh_user USER`")
	}
	if cfg.Port == 0 {
		cfg.Port = 22
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 15 * time.Second
	}
	if cfg.KnownHosts == "" {
		cfg.KnownHosts = filepath.Join(cfg.HomeDir, ".ssh", "known_hosts")
	}
	return &Backend{cfg: cfg, envs: backend.NewTaskEnvs[*shellexec.Environment](Kind)}, nil
}

// Kind returns "ssh".
func (b *Backend) Kind() string { return Kind }

// Isolated is false: the remote host is the user's machine, not a box;
// dangerous commands are still asked about, as in Hermes.
func (b *Backend) Isolated() bool { return false }

// Open returns the environment of taskID, connecting on first use.
func (b *Backend) Open(ctx context.Context, taskID string) (backend.Environment, error) {
	return b.envs.Open(taskID, func() (*shellexec.Environment, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.client == nil {
			c, err := b.dial(ctx)
			if err != nil {
				return nil, err
			}
			b.client = c
		}
		wd, err := b.resolveWorkdir(ctx, b.cfg.Workdir)
		if err != nil {
			return nil, err
		}
		return shellexec.New(transport{client: b.client}, taskID, wd, "ssh "+b.addr()), nil
	})
}

// Close ends every environment's commands and the connection.
func (b *Backend) Close() error {
	_ = b.envs.Close()
	b.mu.Lock()
	client := b.client
	b.client = nil
	b.mu.Unlock()
	if client != nil {
		return client.Close()
	}
	return nil
}

func (b *Backend) addr() string { return net.JoinHostPort(b.cfg.Host, strconv.Itoa(b.cfg.Port)) }

func (b *Backend) dial(ctx context.Context) (*ssh.Client, error) {
	hostKeys, err := b.hostKeyCallback()
	if err != nil {
		return nil, err
	}
	auth, err := b.authMethods()
	if err != nil {
		return nil, err
	}
	cc := &ssh.ClientConfig{User: b.cfg.User, Auth: auth, HostKeyCallback: hostKeys, Timeout: b.cfg.DialTimeout}
	d := net.Dialer{Timeout: b.cfg.DialTimeout}
	conn, err := d.DialContext(ctx, "tcp", b.addr())
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w (check terminal.ssh_host and terminal.ssh_port)", b.addr(), err)
	}
	_ = conn.SetDeadline(time.Now().Add(b.cfg.DialTimeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, b.addr(), cc)
	if err != nil {
		conn.Close()
		var keyErr *knownhosts.KeyError
		switch {
		case errors.As(err, &keyErr) && len(keyErr.Want) == 0:
			return nil, fmt.Errorf("ssh %s: the host key is not in %s; check it and add it with `ssh-keyscan -p %d %s >> %s`",
				b.addr(), b.cfg.KnownHosts, b.cfg.Port, b.cfg.Host, b.cfg.KnownHosts)
		case errors.As(err, &keyErr):
			return nil, fmt.Errorf("ssh %s: the host key does not match %s line %d: refusing to connect (the host was reinstalled, or someone is in the middle)",
				b.addr(), keyErr.Want[0].Filename, keyErr.Want[0].Line)
		}
		return nil, fmt.Errorf("ssh %s as %s: %w (check terminal.ssh_user and terminal.ssh_key)", b.addr(), b.cfg.User, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

func (b *Backend) hostKeyCallback() (ssh.HostKeyCallback, error) {
	if _, err := os.Stat(b.cfg.KnownHosts); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("ssh: %s does not exist, so the host key of %s cannot be checked; check the key and add it with `mkdir -p -m 700 %s && ssh-keyscan -p %d %s >> %s`",
			b.cfg.KnownHosts, b.addr(), filepath.Dir(b.cfg.KnownHosts), b.cfg.Port, b.cfg.Host, b.cfg.KnownHosts)
	} else if err != nil {
		return nil, fmt.Errorf("ssh: known_hosts: %w", err)
	}
	cb, err := knownhosts.New(b.cfg.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("ssh: known_hosts %s: %w", b.cfg.KnownHosts, err)
	}
	return cb, nil
}

// authMethods is the key file, else the agent, else the default keys.
func (b *Backend) authMethods() ([]ssh.AuthMethod, error) {
	if b.cfg.KeyFile != "" {
		path := b.cfg.KeyFile
		if rest, ok := strings.CutPrefix(path, "~/"); ok {
			path = filepath.Join(b.cfg.HomeDir, rest)
		}
		signer, err := loadKey(path)
		if err != nil {
			return nil, fmt.Errorf("terminal.ssh_key %s: %w", b.cfg.KeyFile, err)
		}
		return []ssh.AuthMethod{ssh.PublicKeys(signer)}, nil
	}
	var methods []ssh.AuthMethod
	if b.cfg.AgentSocket != "" {
		if conn, err := net.Dial("unix", b.cfg.AgentSocket); err == nil {
			methods = append(methods, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
		}
	}
	var signers []ssh.Signer
	for _, name := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		if s, err := loadKey(filepath.Join(b.cfg.HomeDir, ".ssh", name)); err == nil {
			signers = append(signers, s)
		}
	}
	if len(signers) > 0 {
		methods = append(methods, ssh.PublicKeys(signers...))
	}
	if len(methods) == 0 {
		return nil, errors.New("ssh: no key: set terminal.ssh_key to a private key file, or start an ssh-agent")
	}
	return methods, nil
}

func loadKey(path string) (ssh.Signer, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, errors.New("the key has a passphrase; load it into ssh-agent (ssh-add) and leave terminal.ssh_key empty")
	}
	return signer, err
}

// resolveWorkdir asks the remote shell for the absolute working directory
// (the home when wd is empty), creating nothing. The answer is the line
// after workdirMarker: what the remote shell's startup prints (a .bashrc
// read by bash under sshd; pyenv's rehash printed lock errors) is not part
// of it.
func (b *Backend) resolveWorkdir(ctx context.Context, wd string) (string, error) {
	probe := shellexec.New(transport{client: b.client}, "", "/", "ssh "+b.addr())
	cd := `cd`
	if wd != "" {
		cd = `cd -- ` + shellfs.Quote(wd)
	}
	out, code, err := probe.Run(ctx, cd+` && printf '`+workdirMarker+`%s\n' "$(pwd -P)"`, nil)
	if err != nil {
		return "", err
	}
	var found string
	for line := range strings.Lines(string(out)) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), workdirMarker); ok {
			found = p
		}
	}
	if code != 0 || found == "" {
		return "", fmt.Errorf("ssh: the remote working directory %q does not exist (terminal.cwd): %s", wd, strings.TrimSpace(string(out)))
	}
	return found, nil
}

// workdirMarker comes before the working directory resolveWorkdir reads.
const workdirMarker = "HERMES_WORKDIR="
