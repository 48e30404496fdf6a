package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/gateway"
)

// Bounds of the supervised gateway's start and stop.
const (
	gatewayStartWait   = 60 * time.Second // until gateway.pid shows the new process
	defaultGatewayStop = 60 * time.Second // SIGTERM drain before SIGKILL
)

// gatewayStatus is what `hermes gateway status` and `hermes cron status`
// report about the gateway of HERMES_HOME.
type gatewayStatus struct {
	Running bool
	gateway.PIDFile
}

func (a *App) gatewayState() gatewayStatus {
	p, ok := gateway.ReadPIDFile(a.Home())
	return gatewayStatus{Running: ok, PIDFile: p}
}

func platformNames(ps []platform) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.name)
	}
	return out
}

// newGatewaySuperviseCmds are `hermes gateway start|stop|restart|status|setup`.
func (a *App) newGatewaySuperviseCmds() []*cobra.Command {
	var stopTimeout time.Duration
	stop := &cobra.Command{
		Use: "stop", Short: "stop the background gateway (SIGTERM drains running turns; SIGKILL after --timeout)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.stopGateway(stopTimeout) },
	}
	stop.Flags().DurationVar(&stopTimeout, "timeout", defaultGatewayStop, "how long to wait for the drain before SIGKILL")
	restart := &cobra.Command{
		Use: "restart", Short: "stop the background gateway (if running) and start it again", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.stopGateway(stopTimeout); err != nil {
				return err
			}
			return a.startGateway(cmd.Context())
		},
	}
	restart.Flags().DurationVar(&stopTimeout, "timeout", defaultGatewayStop, "how long to wait for the drain before SIGKILL")
	return []*cobra.Command{
		{
			Use: "start", Short: "start `hermes gateway run` in the background (logs in HERMES_HOME/logs/gateway.log)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return a.startGateway(cmd.Context()) },
		},
		stop, restart,
		{
			Use: "status", Short: "show whether the gateway runs, its pid, platforms and API server health", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return a.gatewayStatusCmd(cmd.Context()) },
		},
		a.newGatewaySetupCmd(),
	}
}

// startGateway launches `hermes gateway run` in its own session (setsid),
// stdin from /dev/null and output appended to logs/gateway.log (0600), and
// waits until it has published gateway.pid (its platforms are up) or
// exited (then the log's last lines say why).
func (a *App) startGateway(ctx context.Context) error {
	home := a.Home()
	if g := a.gatewayState(); g.Running {
		return fmt.Errorf("the gateway is already running (pid %d); restart it with `hermes gateway restart`", g.PID)
	}
	logPath := gateway.LogPath(home)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return err
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", logPath, err)
	}
	defer logf.Close()
	offset, _ := logf.Seek(0, 2)
	fmt.Fprintf(logf, "--- hermes gateway start %s ---\n", a.Now().Format(time.RFC3339))
	exe := a.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	cmd := exec.Command(exe, "gateway", "run")
	cmd.Env = append(a.Environ(), "HERMES_HOME="+home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s gateway run: %w", exe, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(gatewayStartWait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("the gateway exited at start (%v):\n%s\n(full log: %s)", err, logTail(logPath, offset, 20), logPath)
		case <-deadline.C:
			return fmt.Errorf("the gateway (pid %d) did not come up within %s; see %s", cmd.Process.Pid, gatewayStartWait, logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if g := a.gatewayState(); g.Running && g.PID == cmd.Process.Pid {
				fmt.Fprintf(a.Stdout, "Gateway started (pid %d): %s. Logs: %s\n", g.PID, strings.Join(g.Platforms, ", "), logPath)
				return nil
			}
		}
	}
}

// logTail returns the last n lines written to path after offset.
func logTail(path string, offset int64, n int) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b[offset:]), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stopGateway stops the running gateway (gateway.Stop: SIGTERM, a drain
// of up to timeout, then SIGKILL) and says how it went. Stopping a gateway
// that does not run is not an error.
func (a *App) stopGateway(timeout time.Duration) error {
	outcome, err := gateway.Stop(a.Home(), timeout, func(pid int) {
		fmt.Fprintf(a.Stdout, "Stopping the gateway (pid %d): draining running turns...\n", pid)
	})
	switch {
	case err != nil:
		return err
	case outcome == gateway.NotRunning:
		fmt.Fprintln(a.Stdout, "The gateway is not running.")
	case outcome == gateway.Drained:
		fmt.Fprintln(a.Stdout, "Gateway stopped.")
	default:
		fmt.Fprintf(a.Stdout, "The gateway did not finish within %s and was killed; its running turns can be resumed.\n", timeout)
	}
	return nil
}

// GatewayStoppedExit is `hermes gateway status`'s exit code when no
// gateway runs: 3, "program is not running", as `systemctl status` and
// LSB init scripts answer (0 = running).
const GatewayStoppedExit = 3

// gatewayStatusCmd prints the gateway's state; with the API server
// enabled it asks its /health. A stopped gateway exits GatewayStoppedExit.
func (a *App) gatewayStatusCmd(ctx context.Context) error {
	g := a.gatewayState()
	if !g.Running {
		fmt.Fprintln(a.Stdout, "Gateway: stopped (start it with `hermes gateway start`)")
		return &ExitError{Code: GatewayStoppedExit, Silent: true}
	}
	fmt.Fprintf(a.Stdout, "Gateway: running (pid %d, since %s)\n", g.PID, g.StartedAt.Local().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(a.Stdout, "Platforms: %s\n", strings.Join(g.Platforms, ", "))
	fmt.Fprintf(a.Stdout, "Logs: %s\n", gateway.LogPath(a.Home()))
	cfg, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil || !truthy(cfg.Getenv("API_SERVER_ENABLED")) {
		return nil
	}
	url := apiServerURL(cfg)
	fmt.Fprintf(a.Stdout, "API server: %s %s\n", url, apiHealth(ctx, url))
	return nil
}

// apiServerURL is the address a local client reaches the configured API
// server at (a wildcard bind is reached on loopback).
func apiServerURL(cfg *config.Loaded) string {
	host := cfg.Getenv("API_SERVER_HOST")
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	port := cfg.Getenv("API_SERVER_PORT")
	if port == "" {
		port = strconv.Itoa(gateway.DefaultAPIServerPort)
	}
	return "http://" + net.JoinHostPort(host, port)
}

// apiHealth asks url/health (bounded to 3 s): "healthy" or why not.
func apiHealth(ctx context.Context, url string) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/health", nil)
	if err != nil {
		return "unreachable: " + err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "unreachable: " + err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return "unhealthy: /health answered " + resp.Status
	}
	return "healthy"
}
