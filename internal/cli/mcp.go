package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/mcp"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/tool"
)

// mcpAddOptions are the flags of `hermes mcp add`.
type mcpAddOptions struct {
	url, trust               string
	env, headers             []string
	include, exclude         []string
	timeout, connectTimeout  int
	host, disabled, sampling bool
}

// newMCPCmd is `hermes mcp add|list|remove|test` (Hermes "cli-commands.md"
// mcp; the catalog, install, serve and login subcommands are not
// implemented).
func (a *App) newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "add, list, remove and test MCP servers (mcp_servers in config.yaml)",
		Args:  cobra.NoArgs,
	}
	var o mcpAddOptions
	add := &cobra.Command{
		Use:   "add NAME (--url URL | -- COMMAND [ARGS...])",
		Short: "add or replace an MCP server: a stdio command or a streamable HTTP / SSE url",
		Long: "Add or replace mcp_servers.NAME in config.yaml. A stdio server is the command after --\n" +
			"(e.g. `hermes mcp add fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes`); an HTTP\n" +
			"server is --url. Secret --env values (names like *_TOKEN, *_API_KEY) and --header values are\n" +
			"stored in HERMES_HOME/.env and referenced as ${MCP_<NAME>_<KEY>} in config.yaml.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { return a.mcpAdd(args[0], args[1:], o) },
	}
	f := add.Flags()
	f.StringVar(&o.url, "url", "", "streamable HTTP endpoint (SSE is tried when it does not answer as streamable HTTP)")
	f.StringArrayVar(&o.env, "env", nil, "KEY=VALUE added to a stdio server's environment (repeatable)")
	f.StringArrayVar(&o.headers, "header", nil, "Name=VALUE sent with every HTTP request (repeatable)")
	f.StringArrayVar(&o.include, "include", nil, "only offer the server's tools matching this glob (repeatable)")
	f.StringArrayVar(&o.exclude, "exclude", nil, "do not offer the server's tools matching this glob (repeatable; include wins)")
	f.StringVar(&o.trust, "trust", "", "full (default) or untrusted: every tool call needs approval")
	f.IntVar(&o.timeout, "timeout", 0, "seconds one tool call may take (default 300)")
	f.IntVar(&o.connectTimeout, "connect-timeout", 0, "seconds starting the server may take (default 60)")
	f.BoolVar(&o.host, "host", false, "run a stdio server on the host even with terminal.backend: box")
	f.BoolVar(&o.disabled, "disabled", false, "write the entry with enabled: false")
	f.BoolVar(&o.sampling, "sampling", false, "let the server ask the session's model for completions")

	list := &cobra.Command{
		Use:   "list",
		Short: "list the configured MCP servers (env and header values are never shown)",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.mcpList() },
	}
	remove := &cobra.Command{
		Use:     "remove NAME",
		Aliases: []string{"rm"},
		Short:   "remove an MCP server from config.yaml (and the secrets `mcp add` stored for it)",
		Args:    cobra.ExactArgs(1),
		RunE:    func(_ *cobra.Command, args []string) error { return a.mcpRemove(args[0]) },
	}
	test := &cobra.Command{
		Use:   "test NAME",
		Short: "connect to an MCP server and list its tools (exit 1 when it fails)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(c *cobra.Command, args []string) error { return a.mcpTest(c.Context(), args[0]) },
	}
	cmd.AddCommand(add, list, remove, test)
	return cmd
}

// keyValues parses KEY=VALUE flags.
func keyValues(flag string, in []string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range in {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--%s %q: write it as KEY=VALUE", flag, kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

func (a *App) mcpAdd(name string, command []string, o mcpAddOptions) error {
	env, err := keyValues("env", o.env)
	if err != nil {
		return err
	}
	headers, err := keyValues("header", o.headers)
	if err != nil {
		return err
	}
	srv := config.MCPServer{URL: o.url, Env: env, Headers: headers, Trust: o.trust, Host: o.host,
		Timeout: o.timeout, ConnectTimeout: o.connectTimeout, Sampling: config.MCPSampling{Enabled: o.sampling},
		Tools: config.MCPTools{Include: o.include, Exclude: o.exclude}}
	if len(command) > 0 {
		srv.Command, srv.Args = command[0], command[1:]
	}
	if o.disabled {
		srv.Enabled = new(bool)
	}
	if srv.Command == "" && srv.URL == "" {
		return fmt.Errorf("mcp add %s: give the server's command after -- (e.g. `hermes mcp add %s -- npx -y PACKAGE`) or --url URL", name, name)
	}
	if err := config.SetMCPServer(a.Home(), name, srv); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Added MCP server %s to %s. Check it with `hermes mcp test %s`.\n", name, config.ConfigPath(a.Home()), name)
	if srv.Command != "" && !srv.Host {
		if cfg, err := a.loadConfig(); err == nil && cfg.Config.Terminal.Backend == "box" {
			fmt.Fprintf(a.Stdout, "With terminal.backend: box, stdio MCP servers run inside the box, so %q must exist there; "+
				"`hermes mcp add %s --host -- COMMAND ARGS...` runs it on the host instead.\n", srv.Command, name)
		}
	}
	if srv.Command != "" {
		if _, err := exec.LookPath(srv.Command); err != nil {
			fmt.Fprintf(a.Stderr, "hermes: warning: mcp_servers.%s.command %q is not found on this host (%v); install it or fix the entry with `hermes mcp add %s -- COMMAND ARGS...` (in a box it must exist inside the box)\n",
				name, srv.Command, errors.Unwrap(err), name)
		}
	}
	return nil
}

func (a *App) mcpList() error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	servers := cfg.Config.MCPServers
	if len(servers) == 0 {
		fmt.Fprintln(a.Stdout, "No MCP servers configured. Add one with `hermes mcp add NAME -- COMMAND` or `hermes mcp add NAME --url URL`.")
		return nil
	}
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tTARGET\tENABLED\tTRUST\tTOOLS")
	for _, n := range names {
		s := servers[n]
		transport, target := "http", s.URL
		if s.Stdio() {
			transport, target = "stdio", strings.Join(append([]string{s.Command}, s.Args...), " ")
			if !s.Host && cfg.Config.Terminal.Backend == "box" {
				transport = "stdio (box)"
			}
		}
		trust := "full"
		if s.Untrusted() {
			trust = "untrusted"
		}
		filter := "all"
		if len(s.Tools.Include) > 0 || len(s.Tools.Exclude) > 0 {
			filter = fmt.Sprintf("include %s; exclude %s", listOrDash(s.Tools.Include), listOrDash(s.Tools.Exclude))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", n, transport, escapeControls(target), s.IsEnabled(), trust, filter)
	}
	return tw.Flush()
}

func listOrDash(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return strings.Join(l, ",")
}

func (a *App) mcpRemove(name string) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	removed, err := config.RemoveMCPServer(a.Home(), name, cfg.Config.MCPServers[name])
	if err != nil {
		return err
	}
	if !removed {
		return fmt.Errorf("no MCP server %q in %s; see `hermes mcp list`", name, config.ConfigPath(a.Home()))
	}
	fmt.Fprintf(a.Stdout, "Removed MCP server %s.\n", name)
	return nil
}

// mcpTest connects one server on the host (a box-run server is tested
// outside the box), lists its tools and disconnects.
func (a *App) mcpTest(ctx context.Context, name string) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	srv, ok := cfg.Config.MCPServers[name]
	if !ok {
		return fmt.Errorf("no MCP server %q in %s; see `hermes mcp list`", name, config.ConfigPath(a.Home()))
	}
	srv.Enabled = nil
	wd, _ := os.Getwd()
	redact := session.NewRedactor(cfg, a.Environ(), cfg.Config.Terminal.EnvPassthrough, a.Home())
	reg := tool.NewRegistry()
	start := time.Now()
	m := mcp.Start(mcp.Options{Servers: map[string]config.MCPServer{name: srv}, SessionID: "mcp-test", Workspace: wd,
		Environ: a.Environ, Tools: reg, Redact: redact.Redact, Version: Version})
	defer m.Close()
	if err := m.Ready(ctx); err != nil {
		return err
	}
	st := m.Status()
	if len(st) == 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("MCP server %s was skipped: fix the entry in %s", name, config.ConfigPath(a.Home()))}
	}
	if !st[0].Up {
		what := "url " + srv.URL
		if srv.Stdio() {
			what = "command " + strings.Join(append([]string{srv.Command}, srv.Args...), " ")
		}
		return &ExitError{Code: 1, Err: fmt.Errorf("MCP server %s failed: %s\n(mcp_servers.%s: %s; fix it in %s or with `hermes mcp add %s ...`)",
			name, st[0].Err, name, redact.Redact(what), config.ConfigPath(a.Home()), name)}
	}
	fmt.Fprintf(a.Stdout, "MCP server %s: connected in %s, %d tools\n", name, time.Since(start).Round(time.Millisecond), len(st[0].Tools))
	if srv.Stdio() && !srv.Host && cfg.Config.Terminal.Backend == "box" {
		fmt.Fprintln(a.Stdout, "(tested on the host; in sessions it runs inside the box, which may lack what it needs)")
	}
	sort.Strings(st[0].Tools)
	for _, n := range st[0].Tools {
		desc := ""
		if t, ok := reg.Get(n); ok {
			desc = strings.Join(strings.Fields(t.Spec().Description), " ")
			if len(desc) > 90 {
				desc = desc[:87] + "..."
			}
		}
		fmt.Fprintf(a.Stdout, "  %s  %s\n", n, escapeControls(desc))
	}
	return nil
}
