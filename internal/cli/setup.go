package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/backend/vercel"
	"github.com/hermes-go/hermes/internal/box/image"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/ociimage"
)

// setupSetting is one terminal setting `hermes setup terminal` can write:
// its flag, config key, prompt and validator. check returns the value
// normalised as YAML for config.Set, or an error naming what is accepted.
type setupSetting struct {
	flag, key, label string
	// backends are the terminal.backend values the setting applies to
	// (nil: all); the wizard asks only those of the chosen backend.
	backends []string
	current  func(t config.TerminalConfig) string
	check    func(home, v string) (string, error)
}

// terminalSettings are the settings of `hermes setup terminal`, in the
// order the wizard asks them.
func terminalSettings() []setupSetting {
	box := []string{"box"}
	sized := []string{"box", "docker", vercel.Kind}
	settings := []setupSetting{
		{flag: "backend", key: "terminal.backend", label: "Backend (" + backendChoices + ")",
			current: func(t config.TerminalConfig) string { return t.Backend }, check: checkBackend},
		{flag: "vercel-runtime", key: "terminal.vercel_runtime", label: "Vercel Sandbox runtime (node24, node22, python3.13)", backends: []string{vercel.Kind},
			current: func(t config.TerminalConfig) string { return cmpOrString(t.VercelRuntime, "node24") }, check: checkVercelRuntime},
		{flag: "memory", key: "terminal.container_memory", label: "Memory in MiB (box, docker; vercel_sandbox: 2,048 per vCPU)", backends: sized,
			current: func(t config.TerminalConfig) string { return strconv.Itoa(t.ContainerMemory) }, check: positiveInt("--memory", "MiB, e.g. 4096")},
		{flag: "cpu", key: "terminal.container_cpu", label: "CPUs (cores, may be fractional; whole vCPUs for vercel_sandbox)", backends: sized,
			current: func(t config.TerminalConfig) string { return strconv.FormatFloat(t.ContainerCPU, 'g', -1, 64) }, check: checkCPU},
		{flag: "disk", key: "terminal.container_disk", label: "Box disk in MiB", backends: box,
			current: func(t config.TerminalConfig) string { return strconv.Itoa(t.ContainerDisk) }, check: positiveInt("--disk", "MiB, e.g. 20480")},
		{flag: "image", key: "terminal.box_image", label: "Box image (host, a built image name, a rootfs directory or a tarball)", backends: box,
			current: func(t config.TerminalConfig) string { return t.BoxImage }, check: checkBoxImage},
		{flag: "allow", key: egressAllowKey, label: "Hosts the box may reach (comma-separated, empty for none)", backends: box,
			current: func(t config.TerminalConfig) string { return strings.Join(t.BoxNetwork.Allow, ",") }, check: checkAllowList},
	}
	return append(settings, hostedSettings()...)
}

// applies reports whether s is a setting of backend.
func (s setupSetting) applies(backend string) bool {
	return s.backends == nil || slices.Contains(s.backends, backend)
}

// newSetupCmd is `hermes setup [model|terminal|tools|gateway]` (Hermes "cli-commands.md"
// `hermes setup`): a line-prompt wizard on a terminal, or flags with
// --non-interactive for scripts. Values are validated before anything is
// written; each write is config.Set's atomic update of config.yaml or .env.
func (a *App) newSetupCmd() *cobra.Command {
	var nonInteractive bool
	o := &modelOptions{}
	cmd := &cobra.Command{
		Use:   "setup [model|terminal|tools|gateway]",
		Short: "configure the model, the terminal backend, the toolsets and the gateway (a wizard, or flags with --non-interactive)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			// Plain `setup` takes the model flags as Hermes's does
			// (`hermes setup --non-interactive --provider P --model M`).
			given := *o != modelOptions{}
			if nonInteractive || !a.IsTerminal {
				if !given {
					return errors.New("name what to set up with flags: hermes setup --non-interactive --provider P --model M, " +
						"or hermes setup terminal --non-interactive --backend box --memory 4096 (hermes setup terminal --help lists the backends)")
				}
				b := *a
				b.IsTerminal = false
				return b.runModel(o)
			}
			if err := a.runModel(o); err != nil {
				return err
			}
			return a.setupTerminal(map[string]string{}, true)
		},
	}
	cmd.PersistentFlags().BoolVar(&nonInteractive, "non-interactive", false, "never prompt; take every value from flags")
	addModelFlags(cmd, o)
	// `setup gateway` is `gateway setup` (its own --non-interactive flag
	// shadows the inherited one).
	gw := a.newGatewaySetupCmd()
	gw.Use = "gateway"
	cmd.AddCommand(a.newSetupModelCmd(&nonInteractive), a.newSetupTerminalCmd(&nonInteractive), a.newSetupToolsCmd(&nonInteractive), gw)
	return cmd
}

func (a *App) newSetupModelCmd(nonInteractive *bool) *cobra.Command {
	o := &modelOptions{}
	cmd := &cobra.Command{
		Use:   "model",
		Short: "choose the provider, model and API key (same as hermes model)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			b := *a
			b.IsTerminal = a.IsTerminal && !*nonInteractive
			return b.runModel(o)
		},
	}
	addModelFlags(cmd, o)
	return cmd
}

// addModelFlags adds the model choice flags (--provider, --model,
// --base-url, --api-key) of `setup` and `setup model` to cmd, into o.
func addModelFlags(cmd *cobra.Command, o *modelOptions) {
	f := cmd.Flags()
	f.StringVar(&o.provider, "provider", "", "openrouter, openai, anthropic or custom")
	f.StringVar(&o.model, "model", "", "model id, e.g. anthropic/claude-sonnet-4 on openrouter")
	f.StringVar(&o.baseURL, "base-url", "", "endpoint URL (required for custom)")
	f.StringVar(&o.apiKey, "api-key", "", "API key to save in .env (mode 0600)")
}

func (a *App) newSetupTerminalCmd(nonInteractive *bool) *cobra.Command {
	values := map[string]*string{}
	var allow []string
	cmd := &cobra.Command{
		Use:   "terminal",
		Short: "choose the terminal backend (" + backendChoices + ") and its settings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			given := map[string]string{}
			for name, v := range values {
				if cmd.Flags().Changed(name) {
					given[name] = *v
				}
			}
			if cmd.Flags().Changed("allow") {
				given["allow"] = strings.Join(allow, ",")
			}
			interactive := a.IsTerminal && !*nonInteractive
			if !interactive && len(given) == 0 {
				return errors.New("no settings given: pass --backend " + strings.Join(config.TerminalBackends(), "|") +
					" and its settings (see hermes setup terminal --help)")
			}
			return a.setupTerminal(given, interactive)
		},
	}
	f := cmd.Flags()
	for _, s := range terminalSettings() {
		if s.flag == "allow" {
			f.StringArrayVar(&allow, "allow", nil, "a host, *.suffix, IP or CIDR[:PORT] the box may reach (repeat; replaces the list)")
			continue
		}
		values[s.flag] = f.String(s.flag, "", s.label+" ("+s.key+")")
	}
	return cmd
}

// setupTerminal validates the given values (by flag name), asks for the
// rest when interactive, and writes the settings that were given or asked.
func (a *App) setupTerminal(given map[string]string, interactive bool) error {
	home := a.Home()
	l, err := a.loadConfig()
	if err != nil {
		return err
	}
	cur := l.Config.Terminal
	in := newLineReader(a.Stdin)
	backend := cur.Backend
	type write struct{ key, value string }
	var writes []write
	vals := map[string]string{} // flag → value after setup (given, asked or current)
	for _, s := range terminalSettings() {
		vals[s.flag] = s.current(cur)
	}
	a.vercelLinkDefaults(l.Getenv, vals)
	for _, s := range terminalSettings() {
		v, ok := given[s.flag]
		if !s.applies(backend) && !ok {
			continue // the wizard asks only the chosen backend's settings
		}
		var norm string
		switch {
		case ok:
			if norm, err = s.check(home, v); err == nil {
				err = checkPair(backend, s.flag, norm, vals)
			}
			if err != nil {
				return err
			}
		case interactive && vercelIDSetting(s.flag) && vals[s.flag] == "" && l.Getenv("VERCEL_TOKEN") == "":
			continue // OIDC auth names its project; nothing linked to offer
		case interactive:
			if norm, err = a.askSetting(in, home, s, wizardDefault(backend, s, vals), func(v string) error {
				return checkPair(backend, s.flag, v, vals)
			}); err != nil {
				return err
			}
		default:
			continue
		}
		if s.flag == "backend" {
			backend = norm
		}
		vals[s.flag] = norm
		if norm == "" && config.IsEnvKey(s.key) {
			continue // nothing to save in .env
		}
		writes = append(writes, write{s.key, norm})
	}
	if err := checkBackendSettings(backend, vals); err != nil {
		return err
	}
	for _, w := range writes {
		if err := config.Set(home, w.key, w.value); err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "Set %s = %s\n", w.key, w.value)
	}
	fmt.Fprintf(a.Stdout, "Saved to %s; check it with: hermes doctor\n", config.ConfigPath(home))
	a.credentialNotice(backend, l.Getenv)
	return nil
}

// askSetting prompts for s until its validator and pair accept the
// answer (three tries).
func (a *App) askSetting(in *lineReader, home string, s setupSetting, def string, pair func(string) error) (string, error) {
	for range 3 {
		answer, err := a.ask(in, s.label, def)
		if err != nil {
			return "", err
		}
		norm, err := s.check(home, answer)
		if err == nil {
			err = pair(norm)
		}
		if err == nil {
			return norm, nil
		}
		fmt.Fprintln(a.Stdout, err)
	}
	return "", fmt.Errorf("no valid value for %s", s.key)
}

func checkBackend(_, v string) (string, error) {
	v = strings.TrimSpace(v)
	if !slices.Contains(config.TerminalBackends(), v) {
		return "", fmt.Errorf("--backend %q: use one of %s", v, strings.Join(config.TerminalBackends(), ", "))
	}
	return v, nil
}

func positiveInt(flag, unit string) func(string, string) (string, error) {
	return func(_, v string) (string, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return "", fmt.Errorf("%s %q: give a whole number of %s", flag, v, unit)
		}
		return strconv.Itoa(n), nil
	}
}

func checkCPU(_, v string) (string, error) {
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || n <= 0 || n > 1024 {
		return "", fmt.Errorf("--cpu %q: give a number of cores above 0, e.g. 2 or 0.5", v)
	}
	return strconv.FormatFloat(n, 'g', -1, 64), nil
}

// checkBoxImage accepts what image.Resolve accepts without extracting
// anything: host, a built image's name, a root filesystem directory, or a
// tarball file. Paths are saved absolute.
func checkBoxImage(home, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" || v == image.Host {
		return image.Host, nil
	}
	if _, err := image.LoadManifest(home, v); err == nil {
		return v, nil
	}
	if ociimage.IsSpec(v) { // registry/repo:tag, docker-archive:PATH, oci:DIR...
		if _, err := ociimage.CanonicalRef(v); err != nil {
			return "", fmt.Errorf("--image: %w", err)
		}
		return v, nil
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return "", fmt.Errorf("--image %q: %w", v, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("--image %q: no such built image, directory or tarball; use host, a root filesystem directory, a .tar/.tar.gz/.tar.zst file, or build one with `hermes box image build`", v)
	case fi.IsDir():
		if _, err := image.Resolve(home, abs); err != nil {
			return "", fmt.Errorf("--image: %w", err)
		}
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("--image %q is neither a directory nor a regular file", v)
	}
	return abs, nil
}

// checkAllowList parses comma- or space-separated egress entries and
// returns them as a YAML (JSON) list.
func checkAllowList(_, v string) (string, error) {
	norm := []string{}
	for _, e := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		r, err := egress.ParseRule(e)
		if err != nil {
			return "", fmt.Errorf("--allow: %w", err)
		}
		norm = append(norm, r.String())
	}
	b, _ := json.Marshal(norm) // JSON is YAML; quoting keeps "*.x" from reading as an alias
	return string(b), nil
}
