// Package browser drives a headless Chromium over the DevTools protocol
// (github.com/chromedp/chromedp) for the browser_* tools: one browser per
// session, started on first use and closed with the session. A browser that
// hangs or dies is dropped, so the next call starts a fresh one.
package browser

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// DefaultCommandTimeout bounds one browser action (Hermes
// browser.command_timeout: 30 s).
const DefaultCommandTimeout = 30 * time.Second

// DefaultIdleTimeout is Hermes's browser.inactivity_timeout (120 s): an
// idle Chromium costs some 400 MB.
const DefaultIdleTimeout = 120 * time.Second

// DefaultStartTimeout bounds starting Chromium (seconds on a loaded
// machine; a box adds its own start).
const DefaultStartTimeout = 90 * time.Second

// Flags are the Chromium switches every browser gets: headless, no
// sandbox (hermes confines the process itself; the setuid sandbox needs
// privileges a box does not grant), and none of the background traffic to
// Google's hosts (updates, sync, field trials, QUIC).
var Flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
	"--disable-sync", "--disable-dev-shm-usage", "--disable-extensions", "--disable-default-apps",
	"--disable-breakpad", "--disable-features=Translate,OptimizationHints,MediaRouter",
	"--metrics-recording-only", "--mute-audio", "--window-size=1280,900",
}

// Options configure a Manager.
type Options struct {
	// ExecPath is the Chromium binary; "" = found on PATH (chromium,
	// chromium-browser, google-chrome).
	ExecPath string
	// Workdir returns the directory downloads of a session go to (its
	// workspace).
	Workdir func(sessionID string) string
	// TempDir is where host browsers get their fresh profile directories
	// ("" = the system temp dir).
	TempDir string
	// IdleTimeout closes a session's browser after this long without a
	// call (Hermes browser.inactivity_timeout); 0 = DefaultIdleTimeout,
	// negative = never. The next call starts a fresh browser.
	IdleTimeout time.Duration
	// StartTimeout bounds starting Chromium; 0 = DefaultStartTimeout.
	StartTimeout time.Duration
	// CommandTimeout bounds one action; 0 = DefaultCommandTimeout.
	CommandTimeout time.Duration
	// Explain, when set, says why a page of the session could not be
	// loaded ("" = no idea): the egress gate's refusal in a box.
	Explain func(ctx context.Context, sessionID, url string) string
	// Launch, when set, starts the browser some other way (inside a box)
	// and returns a chromedp allocator context for it.
	Launch func(ctx context.Context, sessionID string) (context.Context, context.CancelFunc, error)
	// DialGuard, when set, is the SSRF guard of a host browser (Launch
	// nil): every connection Chromium makes goes through a loopback proxy
	// that dials only addresses DialGuard accepts (nil error), so a page,
	// a redirect or a DNS answer cannot reach loopback or private hosts.
	DialGuard func(netip.Addr) error
}

// Manager hands out one Browser per session.
type Manager struct {
	opts  Options
	mu    sync.Mutex
	byID  map[string]*Browser
	guard *guardProxy // started with the first host browser when DialGuard is set
}

// NewManager returns a Manager; no browser starts until first use.
func NewManager(opts Options) *Manager {
	if opts.CommandTimeout <= 0 {
		opts.CommandTimeout = DefaultCommandTimeout
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	return &Manager{opts: opts, byID: map[string]*Browser{}}
}

// FindChromium returns the path of a Chromium binary on PATH, or "".
func FindChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Get returns the session's browser, starting it when there is none.
func (m *Manager) Get(ctx context.Context, sessionID string) (*Browser, error) {
	m.mu.Lock()
	b := m.byID[sessionID]
	if b != nil && b.idle != nil {
		b.idle.Stop() // in use: not idle until Touch
	}
	m.mu.Unlock()
	if b != nil {
		return b, nil
	}
	b, err := m.start(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.byID[sessionID]; old != nil { // a parallel call won
		go b.close()
		return old, nil
	}
	m.byID[sessionID] = b
	return b, nil
}

// Touch starts the idle countdown of the session's browser b; callers
// touch it when a call ends (Get stops the countdown), so a long action
// does not count as idle time.
func (m *Manager) Touch(sessionID string, b *Browser) {
	if m.opts.IdleTimeout <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID[sessionID] != b {
		return
	}
	if b.idle == nil {
		b.idle = time.AfterFunc(m.opts.IdleTimeout, func() { m.Drop(sessionID, b) })
	} else {
		b.idle.Reset(m.opts.IdleTimeout)
	}
}

// forget removes b from the table and stops its countdown; m.mu is held.
func (m *Manager) forget(sessionID string, b *Browser) {
	if m.byID[sessionID] == b {
		delete(m.byID, sessionID)
	}
	if b.idle != nil {
		b.idle.Stop()
	}
}

// Drop closes the session's browser after a hang, a crash or idle time,
// so the next call starts a fresh one.
func (m *Manager) Drop(sessionID string, b *Browser) {
	m.mu.Lock()
	m.forget(sessionID, b)
	m.mu.Unlock()
	b.close()
}

// CloseSession closes the session's browser, if any.
func (m *Manager) CloseSession(sessionID string) {
	m.mu.Lock()
	b := m.byID[sessionID]
	if b != nil {
		m.forget(sessionID, b)
	}
	m.mu.Unlock()
	if b != nil {
		b.close()
	}
}

// Close closes every browser.
func (m *Manager) Close() error {
	m.mu.Lock()
	all := m.byID
	for _, b := range all {
		if b.idle != nil {
			b.idle.Stop()
		}
	}
	m.byID = map[string]*Browser{}
	g := m.guard
	m.guard = nil
	m.mu.Unlock()
	for _, b := range all {
		b.close()
	}
	if g != nil {
		g.close()
	}
	return nil
}

// guardProxy returns the manager's SSRF guard proxy, starting it once.
func (m *Manager) guardProxy() (*guardProxy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.guard != nil {
		return m.guard, nil
	}
	g, err := startGuard(m.opts.DialGuard)
	if err != nil {
		return nil, err
	}
	m.guard = g
	return g, nil
}

// Timeout is the bound of one action.
func (m *Manager) Timeout() time.Duration { return m.opts.CommandTimeout }

func (m *Manager) start(ctx context.Context, sessionID string) (*Browser, error) {
	var allocCtx context.Context
	var cancelAlloc context.CancelFunc
	var profile string
	var guard *guardProxy
	if m.opts.Launch != nil {
		var err error
		if allocCtx, cancelAlloc, err = m.opts.Launch(context.Background(), sessionID); err != nil {
			return nil, err
		}
	} else {
		path := m.opts.ExecPath
		if path == "" {
			path = FindChromium()
		}
		if path == "" {
			return nil, errors.New("no Chromium found on PATH; install it (Debian: apt-get install chromium) to use the browser tools")
		}
		var err error
		if profile, err = os.MkdirTemp(m.opts.TempDir, "hermes-browser-"); err != nil {
			return nil, err
		}
		flags := Flags
		if m.opts.DialGuard != nil {
			g, err := m.guardProxy()
			if err != nil {
				os.RemoveAll(profile)
				return nil, err
			}
			flags = append(append([]string(nil), Flags...), g.flags()...)
			guard = g
		}
		opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(profile)}
		for _, f := range flags {
			opts = append(opts, flag(f))
		}
		allocCtx, cancelAlloc = chromedp.NewExecAllocator(context.Background(), opts...)
	}
	// chromedp logs protocol oddities to the standard logger by default;
	// they would land in the user's terminal.
	quiet := func(string, ...any) {}
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(quiet), chromedp.WithErrorf(quiet))
	b := &Browser{ctx: tabCtx, cancel: func() {
		cancelTab()
		cancelAlloc()
		if profile != "" {
			os.RemoveAll(profile)
		}
	}, refs: newRefs()}
	if m.opts.Explain != nil {
		b.explain = func(url string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return m.opts.Explain(ctx, sessionID, url)
		}
	} else if guard != nil {
		b.explain = func(raw string) string {
			u, err := url.Parse(raw)
			if err != nil {
				return ""
			}
			port := u.Port()
			if port == "" {
				port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
			}
			return guard.why(u.Hostname(), port)
		}
	}
	// The first Run starts the browser; it must not carry a timeout.
	started := make(chan error, 1)
	go func() {
		started <- chromedp.Do(tabCtx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			return b.setup(ctx, t, m.opts.Workdir, sessionID)
		}))
	}()
	select {
	case err := <-started:
		if err != nil {
			b.close()
			return nil, fmt.Errorf("starting Chromium: %w", err)
		}
	case <-time.After(m.opts.StartTimeout):
		b.close()
		return nil, fmt.Errorf("starting Chromium: no answer in %s", m.opts.StartTimeout)
	case <-ctx.Done():
		b.close()
		return nil, ctx.Err()
	}
	go b.collectConsole(chromedp.Console(tabCtx))
	go b.handleDialogs(chromedp.Events(tabCtx, page.JavascriptDialogOpening))
	return b, nil
}

// flag converts "--name=value" / "--name" to an allocator option.
func flag(f string) chromedp.ExecAllocatorOption {
	f = f[2:]
	for i := 0; i < len(f); i++ {
		if f[i] == '=' {
			return chromedp.Flag(f[:i], f[i+1:])
		}
	}
	return chromedp.Flag(f, true)
}

// DownloadDir is the workspace subdirectory downloads land in. Not the
// workspace itself: a page can start a download without any click, and a
// file such as HERMES.md, AGENTS.md or a Makefile dropped at the root
// would be read as the project's instructions or run by the next build.
const DownloadDir = "downloads"

// setup confines downloads to the workspace's DownloadDir (Chromium
// creates it on the first download).
func (b *Browser) setup(ctx context.Context, t *chromedp.Target, workdir func(string) string, sessionID string) error {
	if workdir == nil {
		return nil
	}
	dir := workdir(sessionID)
	if dir == "" {
		return nil
	}
	dir = path.Join(dir, DownloadDir) // a box path or a host path, both Linux
	_, err := cdp.Call(ctx, chromedp.FromContext(ctx).Browser, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir,
	})
	return err
}
