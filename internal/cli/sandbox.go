package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/httpguard"
	"github.com/hermes-go/hermes/internal/ociimage"
	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/sandboxserver"
)

// sandboxServeOptions are the flags of hermes sandbox serve.
type sandboxServeOptions struct {
	apiAddr, envdAddr string
	apiKeys           []string
	keysFile          string
	env               []string
	allow             []string
	workspace         string
	hermesBinary      string
	templates         []string
	maxSandboxes      int
	userUID           int
	maxPerTeam        int
	conns             httpguard.Limits
	fleet             fleetOptions
}

func (a *App) newSandboxCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "serve hermes boxes over the E2B protocol (sandbox serve)", Args: unknownCommand}
	o := &sandboxServeOptions{}
	serve := &cobra.Command{
		Use:   "serve",
		Short: "an E2B-compatible server on hermes boxes (E2B_API_URL / E2B_SANDBOX_URL point the E2B SDKs at it)",
		Long: `hermes sandbox serve runs the E2B REST API (--api-addr) and envd (--envd-addr) on
hermes boxes, so code written for the E2B SDKs runs on this machine:

  E2B_API_URL=http://127.0.0.1:3000 E2B_SANDBOX_URL=http://127.0.0.1:49983 E2B_API_KEY=KEY node app.mjs

Templates: base (the box image) and hermes (the same, with this hermes binary
at /usr/local/bin/hermes, hermes-agent and hermes-acp; HERMES_HOME is
/home/user/.hermes). Every sandbox is a hermes box (hermes box ls).
--template NAME=IMAGE makes template NAME (or base, or hermes under its
binary) from an OCI image, as hermes box start --image does: its layers are
the base, its Env applies, commands start in its WorkingDir, and its User
(unless root, or a host account's uid) is the sandbox's user. Each image is
pulled in the background at start (terminal.box_insecure_registries
applies); a create waits for its pull, and a failed pull fails the create
with the template and reference named (the next create pulls again).

Keys: E2B_API_KEY must be one of --api-key or a line of --api-keys-file; a
key is required unless both listeners are on loopback. A line of the file is
KEY (a tenant of its own, like each --api-key) or TEAM KEY (the keys of one
team share their sandboxes). A key sees, reaches and kills only its tenant's
sandboxes; another tenant's answer 404, as if they did not exist.
--max-sandboxes bounds all tenants together, --max-sandboxes-per-team each
(default: a fair share of --max-sandboxes, rounded up, among the tenants the
keys name).

Durable: sandboxes are kept in HERMES_HOME/sandboxes.db. SIGTERM or SIGINT
pauses the running ones (never deletes); the next start runs them again
with the timeout they had left, and paused ones can be connected.

Fleet: --catalog postgres://… (or HERMES_DATABASE_URL) keeps the catalog in
PostgreSQL, shared by every node; --node names this one.

Secrets: envs given at create (e.g. OPENROUTER_API_KEY) are visible to every
command in the sandbox, as on E2B. To keep a key out of the box, store it
with hermes secrets (it is swapped in by the egress gate on the provider's
host only) and pass its placeholder as the env value instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runSandboxServe(cmd.Context(), o) },
	}
	f := serve.Flags()
	f.StringVar(&o.apiAddr, "api-addr", "127.0.0.1:3000", "address of the E2B REST API")
	f.StringVar(&o.envdAddr, "envd-addr", "127.0.0.1:49983", "address of envd (E2B_SANDBOX_URL)")
	f.StringArrayVar(&o.apiKeys, "api-key", nil, "an accepted E2B_API_KEY (repeatable)")
	f.StringVar(&o.keysFile, "api-keys-file", "", "file of accepted API keys, one a line: KEY, or TEAM KEY for keys that share sandboxes")
	f.StringArrayVar(&o.env, "env", nil, "KEY=VALUE added to every sandbox's commands, e.g. OPENROUTER_BASE_URL (repeatable)")
	f.StringArrayVar(&o.allow, "allow", nil, "egress allow entry for every sandbox, after terminal.box_network.allow (repeatable)")
	f.StringVar(&o.workspace, "workspace", "/var/lib/hermes-sandbox/workspace", "empty host directory each box gets a copy-on-write view of")
	f.IntVar(&o.userUID, "user-uid", 0, "host uid (and gid) of the sandboxes' `user`; refused if a host account or process has it (default: 1000 as in E2B when the host does not use it, else a free uid from 101000)")
	f.IntVar(&o.maxSandboxes, "max-sandboxes", 100, "most sandboxes (running and paused) at once, all tenants together; creates past it get 429")
	f.IntVar(&o.maxPerTeam, "max-sandboxes-per-team", 0, "most sandboxes of one tenant (team or key of its own) at once (default: --max-sandboxes shared fairly among the tenants)")
	f.IntVar(&o.conns.MaxConns, "max-connections", 0, "most open connections of both listeners together (0: 8192 or half the open-file limit, the smaller)")
	f.IntVar(&o.conns.MaxConnsPerClient, "max-connections-per-client", httpguard.DefaultMaxConnsPerClient, "most open connections of one client address (an IPv6 client: its /64); more are closed at once")
	f.StringVar(&o.hermesBinary, "hermes-binary", "", "hermes binary installed in the hermes template (default: this one)")
	f.StringArrayVar(&o.templates, "template", nil, "NAME=IMAGE: template NAME makes sandboxes from an OCI image (registry/repo:tag, @sha256:..., an OCI layout dir or a docker save tarball); base and hermes may be given too (repeatable)")
	o.fleet.flags(f)
	cmd.AddCommand(serve)
	return cmd
}

// minKeyLength is the shortest key --api-keys-file accepts (characters).
const minKeyLength = 16

// maxKeysFileBytes bounds the --api-keys-file read (1 MiB).
const maxKeysFileBytes = 1 << 20

// readKeys reads an API keys file (sandboxserver.ParseAPIKeys: KEY or
// TEAM KEY a line). A file without a key, or with a key shorter than
// minKeyLength, is an error naming the file (and line; never the key). A
// file group or others may read gets a warning on warn naming chmod 600.
func readKeys(path string, warn io.Writer) ([]string, map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--api-keys-file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(warn, "hermes: warning: --api-keys-file %s can be read by other users (mode %#o); run: chmod 600 %s\n", path, st.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeysFileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("--api-keys-file %s: %w", path, err)
	}
	if len(data) > maxKeysFileBytes {
		return nil, nil, fmt.Errorf("--api-keys-file %s is larger than 1 MiB; it should hold one key a line", path)
	}
	for n, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || len(f) > 2 || strings.HasPrefix(f[0], "#") { // more words: ParseAPIKeys says so
			continue
		}
		if k := utf8.RuneCountInString(f[len(f)-1]); k < minKeyLength {
			return nil, nil, fmt.Errorf("--api-keys-file %s line %d: the key is %d characters, shorter than %d; replace it with a long random key (e.g. the output of `openssl rand -hex 24`)", path, n+1, k, minKeyLength)
		}
	}
	lone, teams, err := sandboxserver.ParseAPIKeys(bytes.NewReader(data), "--api-keys-file "+path)
	if err == nil && len(lone) == 0 && len(teams) == 0 {
		err = fmt.Errorf("--api-keys-file %s holds no keys (one key a line; blank lines and # comments are skipped); add one, e.g.: openssl rand -hex 24 >> %s", path, path)
	}
	return lone, teams, err
}

// isLoopback reports whether addr (host:port) binds loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// mountTemplate mounts a tmpfs on dir for a template layer: overlayfs
// refuses a lower layer inside another (host mode's "/") on the same file
// system, so the layer lives on a file system of its own. A mount left by
// a crashed server is replaced.
func mountTemplate(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for unix.Unmount(dir, unix.MNT_DETACH) == nil {
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1g"); err != nil {
		return nil, fmt.Errorf("sandbox serve: mount the template layer (tmpfs) on %s: %w (run as root)", dir, err)
	}
	return func() { unix.Unmount(dir, unix.MNT_DETACH) }, nil
}

// installHermesTemplate makes the hermes template's layer under dir:
// usr/local/bin/hermes (a hard link to, or copy of, bin) and the
// hermes-agent and hermes-acp links.
func installHermesTemplate(dir, bin string) error {
	binDir := filepath.Join(dir, "usr", "local", "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	dst := filepath.Join(binDir, "hermes")
	tmp := dst + ".new"
	os.Remove(tmp)
	if err := os.Link(bin, tmp); err != nil {
		src, err := os.Open(bin)
		if err != nil {
			return fmt.Errorf("hermes template: %w", err)
		}
		defer src.Close()
		pf, err := renameio.NewPendingFile(dst, renameio.WithPermissions(0o755))
		if err != nil {
			return err
		}
		defer pf.Cleanup()
		if _, err := io.Copy(pf, src); err != nil {
			return err
		}
		if err := pf.CloseAtomicallyReplace(); err != nil {
			return err
		}
	} else if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	for _, name := range []string{"hermes-agent", "hermes-acp"} {
		if err := renameio.Symlink("hermes", filepath.Join(binDir, name)); err != nil {
			return err
		}
	}
	return nil
}

func (a *App) runSandboxServe(ctx context.Context, o *sandboxServeOptions) error {
	keys := o.apiKeys
	var teams map[string][]string
	if o.keysFile != "" {
		more, byTeam, err := readKeys(o.keysFile, a.Stderr)
		if err != nil {
			return err
		}
		keys, teams = append(keys, more...), byTeam
	}
	for _, k := range keys {
		if strings.TrimSpace(k) == "" {
			return errors.New("sandbox serve: an --api-key is empty or blank: give a real key (e.g. `openssl rand -hex 24`)")
		}
	}
	if len(keys) == 0 && len(teams) == 0 && (!isLoopback(o.apiAddr) || !isLoopback(o.envdAddr)) {
		return errors.New("sandbox serve: a listener is not on loopback, so an API key is required: pass --api-key KEY or --api-keys-file FILE")
	}
	env := map[string]string{}
	for _, kv := range o.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--env %q: write KEY=VALUE", kv)
		}
		env[k] = v
	}
	templates, err := parseTemplateFlags(o.templates)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(a.Stderr, nil))
	catalog, node, err := a.openCatalog(ctx, &o.fleet, log)
	if err != nil {
		return err
	}
	defer catalog.Close()
	t, err := a.boxTerminalConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.workspace, 0o755); err != nil {
		return fmt.Errorf("--workspace: %w", err)
	}
	bin := o.hermesBinary
	if bin == "" {
		bin = a.Executable
	}
	tplDir := filepath.Join(a.Home(), "sandbox", "templates", "hermes")
	unmount, err := mountTemplate(tplDir)
	if err != nil {
		return err
	}
	defer unmount()
	if err := installHermesTemplate(tplDir, bin); err != nil {
		return fmt.Errorf("hermes template in %s: %w", tplDir, err)
	}
	templates["hermes"] = sandboxserver.Template{Image: templates["hermes"].Image, Layers: []string{tplDir}}
	if err := addE2BRoot(templates, filepath.Join(a.Home(), "sandbox", "templates", "e2b-root")); err != nil {
		return err
	}
	images, err := a.ociStore(nil)
	if err != nil {
		return err
	}
	userUID, why, err := sandboxserver.ChooseUserUID(sandboxserver.SystemHostUIDs(), o.userUID)
	if err != nil {
		return err
	}
	log.Info("sandbox user", "name", "user", "uid", userUID, "why", why)
	persistent := true
	t.ContainerPersistent, t.BoxWorkspace, t.Cwd, t.LifetimeSeconds = &persistent, "overlay", o.workspace, 0
	var srv *sandboxserver.Server
	mgr, err := box.NewManager(box.Options{Terminal: t, Home: a.Home(), Executable: a.Executable, Prestart: true, SwitchUsers: true,
		SudoUIDs: []uint32{uint32(userUID)}, UserHome: a.Getenv("HOME"), LookupEnv: a.lookupEnv,
		Layers:    func(task string) []string { return srv.Layers(task) },
		Image:     func(task string) string { return srv.Image(task) },
		NewEgress: func(task string) (*egress.BoxSession, error) { return srv.NewEgress(task) }})
	if err != nil {
		return err
	}
	defer mgr.Close()
	srv, err = sandboxserver.New(sandboxserver.Config{Boxes: mgr, Catalog: catalog, Node: node, APIKeys: keys, Teams: teams, Env: env, Log: log, UserUID: userUID,
		MaxSandboxes: o.maxSandboxes, MaxSandboxesPerTeam: o.maxPerTeam,
		Templates: templates, PullImage: images.Ensure, HostAccount: sandboxserver.SystemHostUIDs().Account,
		Allow: append(append([]string{}, t.BoxNetwork.Allow...), o.allow...), Deny: t.BoxNetwork.Deny,
		NewGate: func(allow, deny []string) (*egress.Gate, error) {
			return egress.New(egress.Options{Home: a.Home(), Allow: allow, Deny: deny, CAFile: t.BoxNetwork.CAFile, BoxMemoryMiB: t.ContainerMemory})
		}})
	if err != nil {
		return err
	}
	need := sandboxcatalog.Need{CPU: max(int(math.Ceil(t.ContainerCPU)), 1), MemoryMB: int64(max(t.ContainerMemory, 1))}
	if err := a.joinFleet(srv, catalog, o, node, need); err != nil {
		return err
	}
	defer pauseForShutdown(srv, log)
	restoreStart := time.Now()
	rep, err := srv.Restore(ctx)
	if err != nil {
		return fmt.Errorf("sandbox serve: read the sandboxes back: %w", err)
	}
	log.Info("sandboxes read back from the catalog", "sandboxes", rep.String(), "took", time.Since(restoreStart).Round(time.Millisecond).String())
	removeLeftSandboxes(a.Home(), mgr, srv, log)
	srv.WarmImages()
	if err := srv.RunFleet(ctx); err != nil {
		return fmt.Errorf("sandbox serve: join the fleet: %w", err)
	}
	conns := httpguard.NewConns(o.conns, log, nil)
	return serveBoth(ctx, log, conns, srv.Drain, []listener{{o.apiAddr, srv.APIHandler()}, {o.envdAddr, srv.EnvdHandler()}})
}

// parseTemplateFlags reads --template NAME=IMAGE flags: templates by
// name, with "base" and "hermes" present (without an image unless given).
func parseTemplateFlags(flags []string) (map[string]sandboxserver.Template, error) {
	out := map[string]sandboxserver.Template{"base": {}, "hermes": {}}
	given := map[string]bool{}
	for _, f := range flags {
		name, ref, ok := strings.Cut(f, "=")
		name, ref = strings.TrimSpace(name), strings.TrimSpace(ref)
		if !ok || name == "" || ref == "" {
			return nil, fmt.Errorf("--template %q: write NAME=IMAGE, e.g. --template python=docker.io/library/python:3.12-slim", f)
		}
		if strings.ContainsAny(name, "/: \t") || len(name) > 64 {
			return nil, fmt.Errorf("--template %q: the name %q must be a word (letters, digits, - _ . ; at most 64)", f, name)
		}
		if given[name] {
			return nil, fmt.Errorf("--template %q: template %q is given twice", f, name)
		}
		if !ociimage.IsSpec(ref) {
			return nil, fmt.Errorf("--template %q: %q is not an OCI image (registry/repo:tag, repo@sha256:..., an OCI layout dir or a docker save tarball, written /abs/path or ./rel/path)", f, ref)
		}
		if _, err := ociimage.CanonicalRef(ref); err != nil {
			return nil, fmt.Errorf("--template %q: %w", f, err)
		}
		given[name] = true
		out[name] = sandboxserver.Template{Image: ref}
	}
	return out, nil
}

// addE2BRoot lays a layer holding /home/user (E2B's home, 0755) under
// the template layers of every template made from an image: an image
// without /home could not get one, as a box's root is writable only
// beneath directories it has (Landlock). The layer is made at dir.
func addE2BRoot(templates map[string]sandboxserver.Template, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "home", "user"), 0o755); err != nil {
		return fmt.Errorf("sandbox serve: the layer of /home/user at %s: %w", dir, err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "home"), filepath.Join(dir, "home", "user")} {
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	for name, tpl := range templates {
		if tpl.Image != "" {
			tpl.Layers = append(tpl.Layers, dir)
			templates[name] = tpl
		}
	}
	return nil
}

// shutdownBound bounds the pause of every running sandbox at the server's
// end; with serveBoth's requestGrace, the server exits within 25 s of a
// SIGTERM (Kubernetes' default grace is 30 s).
const shutdownBound = 20 * time.Second

// pauseForShutdown pauses srv's running sandboxes (kept for the next
// start), within shutdownBound.
func pauseForShutdown(srv *sandboxserver.Server, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	start := time.Now()
	running := srv.Running()
	if err := srv.Shutdown(ctx); err != nil {
		log.Error("pause the sandboxes for the shutdown", "err", err)
		return
	}
	if running == 0 {
		log.Info("no sandbox ran: none to pause")
		return
	}
	log.Info("sandboxes paused and kept for the next start", "count", running, "took", time.Since(start).Round(time.Millisecond).String())
}

// removeLeftSandboxes removes the boxes of sandboxes srv does not know: a
// previous server was killed while it created or removed them.
func removeLeftSandboxes(home string, mgr *box.Manager, srv *sandboxserver.Server, log *slog.Logger) {
	boxes, _ := box.ListBoxes(home)
	for _, b := range boxes {
		if strings.HasPrefix(b.Task, sandboxserver.TaskPrefix) && !b.InUse && !srv.Known(b.Task) {
			if err := mgr.Remove(b.Task); err == nil {
				log.Info("removed the box of a sandbox a previous server left", "box", b.Task)
			}
		}
	}
}

// listener is a listen address and its handler.
type listener struct {
	addr    string
	handler http.Handler
}

// requestGrace is how long requests in flight at the server's end may
// take to finish before their connections are closed.
const requestGrace = 5 * time.Second

// serveBoth serves the listeners until ctx ends or one
// fails. Connections are bounded by conns (one budget for both
// listeners), header reads and idle connections by httpguard.NewServer;
// bodies are bounded by the handlers, and streams (commands) may run
// long, so there is no write timeout. At the end, drain is called
// (creates are refused from then on), then requests in flight get
// requestGrace to finish, both listeners together.
func serveBoth(ctx context.Context, log *slog.Logger, conns *httpguard.Conns, drain func(), listeners []listener) error {
	errc := make(chan error, len(listeners))
	var servers []*http.Server
	defer func() {
		drain()
		sctx, cancel := context.WithTimeout(context.Background(), requestGrace)
		defer cancel()
		var wg sync.WaitGroup
		for _, hs := range servers {
			wg.Go(func() {
				if hs.Shutdown(sctx) != nil {
					hs.Close()
				}
			})
		}
		wg.Wait()
	}()
	for _, l := range listeners {
		ln, err := conns.Listen(l.addr)
		if err != nil {
			return fmt.Errorf("sandbox serve: listen on %s: %w", l.addr, err)
		}
		log.Info("listening", "addr", ln.Addr().String())
		hs := httpguard.NewServer(l.handler)
		servers = append(servers, hs)
		go func() { errc <- hs.Serve(ln) }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
