package cli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/module"

	"github.com/hermes-go/hermes/internal/selfupdate"
)

// ModulePath is this program's Go module; releases are its tags.
const ModulePath = "github.com/hermes-go/hermes"

// updateOptions are the flags of `hermes update`.
type updateOptions struct {
	check bool
	yes   bool
}

// newUpdateCmd is `hermes update [--check] [--yes]` (Hermes Agent
// cli-commands.md `update`): find the newest release through the Go module
// proxy (GOPROXY), say what would change, and install it with
// `go install MODULE/cmd/hermes@VERSION` when a Go toolchain is on PATH,
// else print the commands to run.
func (a *App) newUpdateCmd() *cobra.Command {
	o := &updateOptions{}
	cmd := &cobra.Command{
		Use:   "update",
		Short: "update hermes to the newest release (through the Go module proxy)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.runUpdate(cmd.Context(), o) },
	}
	cmd.Flags().BoolVar(&o.check, "check", false, "only say whether a newer release exists and what would change")
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "install without asking")
	return cmd
}

func (a *App) runUpdate(ctx context.Context, o *updateOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	w := a.Stdout
	f := selfupdate.Finder{GOPROXY: a.Getenv("GOPROXY")}
	rel, err := f.Latest(ctx, ModulePath)
	if errors.Is(err, selfupdate.ErrRefused) {
		return fmt.Errorf("hermes update: %w (the proxy is reachable but does not serve %s here: set GOPROXY to a proxy that does)", err, ModulePath)
	}
	if err != nil {
		return fmt.Errorf("hermes update: %w (set GOPROXY to a reachable module proxy)", err)
	}
	current := "v" + strings.TrimPrefix(Version, "v")
	when := ""
	if !rel.Time.IsZero() {
		when = " (released " + rel.Time.UTC().Format("2006-01-02") + ")"
	}
	if !selfupdate.Newer(rel.Version, current) {
		fmt.Fprintf(w, "hermes %s is up to date (newest release %s%s)\n", current, rel.Version, when)
		return nil
	}
	// hermes and hermes-box-init (every box's PID 1, found beside hermes) together.
	target := ModulePath + "/cmd/hermes@" + rel.Version + " " + ModulePath + "/cmd/hermes-box-init@" + rel.Version
	dest := filepath.Dir(a.Executable)
	goBin, goErr := exec.LookPath("go")
	fmt.Fprintf(w, "hermes %s → %s%s\n", current, rel.Version, when)
	fmt.Fprintf(w, "would replace %s (installed by: %s)\n", a.Executable, InstallMethod())
	fmt.Fprintf(w, "bundled skills in %s are refreshed on its first start; copies you edited are kept\n", filepath.Join(a.Home(), "skills"))
	if goErr != nil {
		fmt.Fprintf(w, "no Go toolchain on PATH; install Go 1.26 or newer (https://go.dev/dl/), then run:\n  GOBIN=%s go install %s\n", dest, target)
		fmt.Fprintf(w, "or from a checkout:\n  git clone https://%s && cd hermes && git checkout %s && PREFIX=%s ./install.sh\n",
			ModulePath, rel.Version, filepath.Dir(dest))
		if o.check {
			return nil
		}
		return errors.New("hermes update: no Go toolchain to install with; run the commands above")
	}
	fmt.Fprintf(w, "would run: GOBIN=%s %s install %s\n", dest, goBin, target)
	if o.check {
		return nil
	}
	if !o.yes {
		if !a.IsTerminal {
			return errors.New("hermes update: pass --yes to install without a terminal to confirm on")
		}
		answer, err := a.ask(newLineReader(a.Stdin), "Install "+rel.Version+"? [y/N]", "n")
		if err != nil {
			return err
		}
		if !strings.EqualFold(answer, "y") && !strings.EqualFold(answer, "yes") {
			fmt.Fprintln(w, "Not installed.")
			return nil
		}
	}
	return a.goInstall(ctx, goBin, dest, target)
}

// goInstall runs `go install target` with GOBIN=dest, its output shown.
func (a *App) goInstall(ctx context.Context, goBin, dest, target string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, append([]string{"install"}, strings.Fields(target)...)...)
	cmd.Env = append(a.Environ(), "GOBIN="+dest)
	cmd.Stdout, cmd.Stderr = a.Stdout, a.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hermes update: go install %s: %w", target, err)
	}
	newBin := filepath.Join(dest, "hermes")
	fmt.Fprintf(a.Stdout, "Installed %s\n", newBin)
	sync := exec.CommandContext(ctx, newBin, "skills", "sync")
	sync.Env = a.Environ()
	sync.Stdout, sync.Stderr = a.Stdout, a.Stderr
	if err := sync.Run(); err != nil {
		fmt.Fprintf(a.Stderr, "warning: refreshing bundled skills with %s: %v (they refresh on its next start)\n", newBin, err)
	}
	return nil
}

// installMethodFlag is set by install.sh with -ldflags -X (e.g. "install.sh").
var installMethodFlag = ""

// InstallMethod says how this binary was installed: `go install
// MODULE@VERSION` (a module build from the proxy), install.sh from a
// checkout, or a source build.
func InstallMethod() string {
	if installMethodFlag != "" {
		return installMethodFlag
	}
	if v := moduleVersion(); v != "" && v != "(devel)" && !module.IsPseudoVersion(v) && !strings.Contains(v, "+") {
		return "go install " + ModulePath + "/cmd/hermes@" + v
	}
	return "source build (go build / make)"
}

// moduleVersion is the main module's version recorded in the binary
// ("v0.22.0" for go install MODULE@v0.22.0, "(devel)" or a pseudo-version
// for builds from a checkout).
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return bi.Main.Version
}
