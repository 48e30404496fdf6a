package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/httpguard"
	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/llm/providers/preset"
	"github.com/hermes-go/hermes/internal/modelproxy"
)

// proxyOptions are the flags of `hermes proxy start`.
type proxyOptions struct {
	host     string
	port     int
	provider string
	model    string
}

// newProxyCmd is `hermes proxy start|status|providers` (Hermes Agent
// cli-commands.md `proxy`): a local OpenAI-compatible endpoint that
// forwards to the configured provider with the credential attached on the
// host (package modelproxy).
func (a *App) newProxyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "serve the configured model as a local OpenAI-compatible endpoint (the key stays on this host)",
		Args:  cobra.NoArgs,
	}
	o := &proxyOptions{}
	start := &cobra.Command{
		Use:   "start",
		Short: "run the proxy in the foreground until SIGTERM or Ctrl-C; prints the token callers send",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.runProxyStart(o) },
	}
	f := start.Flags()
	f.StringVar(&o.host, "host", "127.0.0.1", "address to listen on (loopback by default; the token is required everywhere)")
	f.IntVar(&o.port, "port", 8645, "port to listen on (0 picks a free one)")
	f.StringVar(&o.provider, "provider", "", "provider to forward to (default model.provider; see hermes proxy providers)")
	f.StringVar(&o.model, "model", "", "model for requests that name none (default model.default, else the provider's default)")
	cmd.AddCommand(start,
		&cobra.Command{Use: "status", Short: "show the running proxy's listener, provider and request counts", Args: cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error { return a.runProxyStatus() }},
		&cobra.Command{Use: "providers", Short: "list the providers the proxy can forward to and whether a credential is set", Args: cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error { return a.runProxyProviders() }})
	return cmd
}

func (a *App) runProxyStart(o *proxyOptions) error {
	home := a.Home()
	l, err := a.loadConfig()
	if err != nil {
		return err
	}
	m := l.Config.Model
	popts := providers.Options{Provider: m.Provider, Model: m.Default, BaseURL: m.BaseURL, APIKey: m.APIKey, Getenv: l.Getenv}
	if o.provider != "" && preset.Canonical(o.provider) != preset.Canonical(m.Provider) {
		// Another provider: nothing configured for model.provider applies
		// (its key or base URL must not go to this one).
		popts = providers.Options{Provider: o.provider, Getenv: l.Getenv}
	}
	if o.model != "" {
		popts.Model = o.model
	}
	ep, err := providers.ResolveEndpoint(popts)
	if err != nil {
		return fmt.Errorf("hermes proxy: %w", err)
	}
	token, err := modelproxy.LoadOrCreateToken(home)
	if err != nil {
		return err
	}
	p, err := modelproxy.New(modelproxy.Config{Endpoint: ep, Token: token, Now: a.Now})
	if err != nil {
		return err
	}
	if o.port < 0 || o.port > 65535 {
		return fmt.Errorf("--port %d: use 0-65535", o.port)
	}
	addr := net.JoinHostPort(o.host, strconv.Itoa(o.port))
	// The proxy's listener is guarded as every hermes listener is
	// (httpguard): connections bounded in total and per client, 0.0.0.0 on
	// IPv4, Origin refused to web pages, JSON bodies only, bounded
	// header/body/idle times. Every request but /health needs the token.
	conns := httpguard.NewConns(httpguard.Limits{}, nil, a.Now)
	ln, err := conns.Listen(addr)
	if err != nil {
		return fmt.Errorf("hermes proxy: listen on %s: %w (another process may use the port: pass --port)", addr, err)
	}
	bound := ln.Addr().String()
	if err := modelproxy.WriteState(home, modelproxy.State{PID: os.Getpid(), Address: bound, Provider: ep.Name, Started: a.Now()}); err != nil {
		ln.Close()
		return err
	}
	defer modelproxy.RemoveState(home, os.Getpid())
	a.printProxyBanner(bound, ep, token, home)
	ctx, stop := SignalContext()
	defer stop()
	policy := httpguard.Policy{Keyed: true, KeyHint: "the proxy token"}
	err = modelproxy.Serve(ctx, ln, httpguard.BodyDeadline(policy.Handler(p.Handler()), 0), 10*time.Second)
	st := p.Stats()
	fmt.Fprintf(a.Stdout, "hermes proxy stopped: %d requests, %d failed, %d unauthorised\n", st.Requests, st.Failed, st.Unauthorized)
	return err
}

func (a *App) printProxyBanner(bound string, ep providers.Endpoint, token, home string) {
	w := a.Stdout
	base := "http://" + bound + "/v1"
	fmt.Fprintf(w, "hermes proxy listening on %s\n", base)
	fmt.Fprintf(w, "provider  %s (%s) at %s, model %s\n", ep.Label, ep.Name, ep.BaseURL, ep.Model)
	fmt.Fprintf(w, "token     %s\n", token)
	fmt.Fprintf(w, "          (kept in %s; callers send it as the API key)\n", modelproxy.TokenPath(home))
	fmt.Fprintf(w, "use       OPENAI_BASE_URL=%s OPENAI_API_KEY=<token>\n", base)
	if host, _, _ := net.SplitHostPort(bound); !isLoopbackHost(host) {
		fmt.Fprintf(w, "note      listening beyond loopback (%s): anyone who can reach it and holds the token uses your %s credential\n", host, ep.Name)
	}
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runProxyStatus reads the state file of a running proxy and asks its
// /status endpoint (with the token) for the counts.
func (a *App) runProxyStatus() error {
	home := a.Home()
	st, ok, err := modelproxy.ReadState(home)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("hermes proxy is not running (start it with: hermes proxy start)")
	}
	token, err := modelproxy.LoadOrCreateToken(home)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+st.Address+"/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("hermes proxy (pid %d, %s) does not answer: %v; if it is gone, remove %s",
			st.PID, st.Address, unwrapErr(err), modelproxy.StatePath(home))
	}
	defer resp.Body.Close()
	var s modelproxy.Stats
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("hermes proxy at %s answered /status with HTTP %d", st.Address, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&s); err != nil {
		return fmt.Errorf("hermes proxy at %s: /status: %w", st.Address, err)
	}
	w := a.Stdout
	fmt.Fprintf(w, "listener   http://%s/v1 (pid %d, since %s)\n", st.Address, st.PID, s.Started.Format(time.RFC3339))
	fmt.Fprintf(w, "provider   %s (%s) at %s, model %s\n", s.Label, s.Provider, s.Upstream, s.Model)
	fmt.Fprintf(w, "requests   %d (%d failed, %d in flight, %d unauthorised)\n", s.Requests, s.Failed, s.InFlight, s.Unauthorized)
	return nil
}

func unwrapErr(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// runProxyProviders lists the presets (and custom) with their endpoint and
// whether a credential is set: the variable's name, never its value.
func (a *App) runProxyProviders() error {
	l, err := a.loadConfig()
	if err != nil {
		return err
	}
	w := a.Stdout
	for _, p := range preset.All() {
		cred := "no credential (" + strings.Join(p.KeyEnv, " or ") + ")"
		if _, name := p.Key(l.Getenv); name != "" {
			cred = "credential from " + name
		} else if p.KeyOptional {
			cred = "no key needed"
		}
		mark := " "
		if preset.Canonical(l.Config.Model.Provider) == p.Slug {
			mark = "*"
		}
		fmt.Fprintf(w, "%s %-15s %-24s %-55s %s\n", mark, p.Slug, p.Label, p.URL(l.Getenv), cred)
	}
	if l.Config.Model.BaseURL != "" {
		fmt.Fprintf(w, "  %-15s %-24s %s\n", "custom", "model.base_url", l.Config.Model.BaseURL)
	}
	return nil
}
