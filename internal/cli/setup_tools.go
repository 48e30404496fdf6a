package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/session"
)

// newSetupToolsCmd is `hermes setup tools`: choose the enabled toolsets
// (config.yaml `toolsets:`; empty = all), with a toggle list on a terminal
// or --toolsets with --non-interactive (Hermes `hermes tools`).
func (a *App) newSetupToolsCmd(nonInteractive *bool) *cobra.Command {
	var toolsets []string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "choose the enabled toolsets (toolsets: in config.yaml)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			given := cmd.Flags().Changed("toolsets")
			interactive := a.IsTerminal && !*nonInteractive
			if !interactive && !given {
				return fmt.Errorf("no toolsets given: pass --toolsets %s (or all)", strings.Join(session.Toolsets(), ","))
			}
			return a.setupTools(toolsets, given, interactive)
		},
	}
	cmd.Flags().StringSliceVar(&toolsets, "toolsets", nil, "toolsets to enable, comma-separated ("+strings.Join(session.Toolsets(), ", ")+", or all)")
	return cmd
}

// setupTools checks the given toolsets (or asks on a terminal) and
// writes toolsets: to config.yaml.
func (a *App) setupTools(given []string, haveGiven, interactive bool) error {
	avail := session.Toolsets()
	var chosen []string
	if haveGiven {
		for _, ts := range given {
			ts = strings.TrimSpace(ts)
			switch {
			case ts == "all" || ts == "*":
				chosen = nil
			case slices.Contains(avail, ts):
				chosen = append(chosen, ts)
			default:
				return fmt.Errorf("--toolsets: unknown toolset %q; available: %s (or all)", ts, strings.Join(avail, ", "))
			}
			if ts == "all" || ts == "*" {
				break
			}
		}
	} else {
		l, err := a.loadConfig()
		if err != nil {
			return err
		}
		if chosen, err = a.askToolsets(avail, l.Config.Toolsets); err != nil {
			return err
		}
	}
	if len(chosen) == len(avail) {
		chosen = nil // every toolset: keep following new ones
	}
	value := "[]"
	if len(chosen) > 0 {
		b, _ := json.Marshal(chosen)
		value = string(b)
	}
	if err := config.Set(a.Home(), "toolsets", value); err != nil {
		return err
	}
	shown := "all"
	if len(chosen) > 0 {
		shown = strings.Join(chosen, ", ")
	}
	fmt.Fprintf(a.Stdout, "Enabled toolsets: %s; saved to %s\n", shown, config.ConfigPath(a.Home()))
	return nil
}

// askToolsets shows the toolsets with their state and toggles the
// numbers typed until an empty line.
func (a *App) askToolsets(avail, current []string) ([]string, error) {
	on := map[string]bool{}
	for _, ts := range avail {
		on[ts] = len(current) == 0 || slices.Contains(current, ts) ||
			slices.Contains(current, "all") || slices.Contains(current, "*")
	}
	in := newLineReader(a.Stdin)
	for {
		fmt.Fprintln(a.Stdout, "Toolsets:")
		for i, ts := range avail {
			mark := " "
			if on[ts] {
				mark = "x"
			}
			fmt.Fprintf(a.Stdout, "  %d) [%s] %s\n", i+1, mark, ts)
		}
		answer, err := a.ask(in, "Numbers to toggle (space-separated), Enter to save", "")
		if err != nil {
			return nil, err
		}
		if answer == "" {
			break
		}
		for _, f := range strings.Fields(answer) {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > len(avail) {
				fmt.Fprintf(a.Stdout, "%q: type numbers from 1 to %d\n", f, len(avail))
				continue
			}
			on[avail[n-1]] = !on[avail[n-1]]
		}
	}
	var out []string
	for _, ts := range avail {
		if on[ts] {
			out = append(out, ts)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no toolset enabled: the agent would have no tools; enable at least one (or pass --toolsets all)")
	}
	return out, nil
}
