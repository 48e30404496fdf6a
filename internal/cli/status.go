package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// statusSessions is how many recent sessions `hermes status` lists.
const statusSessions = 5

// newStatusCmd is `hermes status` (Hermes "cli-commands.md" `hermes
// status`): where the config is, which provider, model and terminal
// backend are in effect, and the most recent sessions. It never creates
// state.db.
func (a *App) newStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "summarise config, provider, model, backend and recent sessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := a.loadConfig()
			if err != nil {
				return err
			}
			a.printStatusConfig(l)
			return a.printRecentSessions(cmd)
		},
	}
}

func (a *App) printStatusConfig(l *config.Loaded) {
	w := a.Stdout
	home := a.Home()
	note := ""
	if _, err := os.Stat(l.Path); errors.Is(err, os.ErrNotExist) {
		note = " (not created; defaults apply)"
	}
	fmt.Fprintf(w, "HERMES_HOME  %s\n", home)
	fmt.Fprintf(w, "config       %s%s\n", l.Path, note)
	c := l.Config
	prov, err := providers.Resolve(providers.Options{Provider: c.Model.Provider, BaseURL: c.Model.BaseURL, Getenv: l.Getenv})
	defaultModel := ""
	if err == nil {
		defaultModel = providers.DefaultModel(prov)
	}
	switch {
	case err != nil:
		prov = "none (run hermes model)"
	case c.Model.Provider == "" || c.Model.Provider == "auto":
		prov += " (auto: from the API key in the environment)"
	}
	fmt.Fprintf(w, "provider     %s\n", prov)
	model := c.Model.Default
	if model == "" && defaultModel != "" {
		model = defaultModel + " (the provider's default)"
	}
	if model == "" {
		model = "none (run hermes model)"
	}
	fmt.Fprintf(w, "model        %s\n", model)
	if c.Model.BaseURL != "" {
		fmt.Fprintf(w, "base URL     %s\n", c.Model.BaseURL)
	}
	if c.Agent.ReasoningEffort != "" {
		fmt.Fprintf(w, "reasoning    %s\n", c.Agent.ReasoningEffort)
	}
	backend := c.Terminal.Backend
	if backend == "box" {
		t := c.Terminal
		backend += fmt.Sprintf(" (image %s, %g cpu, %d MB memory, %d MB disk", t.BoxImage, t.ContainerCPU, t.ContainerMemory, t.ContainerDisk)
		if n := len(t.BoxNetwork.Allow); n > 0 {
			backend += fmt.Sprintf(", egress allow %s", strings.Join(t.BoxNetwork.Allow, " "))
		} else {
			backend += ", no egress"
		}
		backend += ")"
	}
	fmt.Fprintf(w, "backend      %s\n", backend)
	fmt.Fprintf(w, "approvals    %s\n", c.Approvals.Mode)
}

func (a *App) printRecentSessions(cmd *cobra.Command) error {
	w := a.Stdout
	if _, err := os.Stat(filepath.Join(a.Home(), store.FileName)); errors.Is(err, os.ErrNotExist) && !a.sessionsInPostgres() {
		fmt.Fprintln(w, "sessions     none yet")
		return nil
	}
	return a.withSessionStore(func(st store.Store) error {
		list, err := st.List(cmd.Context(), store.ListOptions{Limit: statusSessions})
		if err != nil {
			return err
		}
		if len(list) == 0 {
			fmt.Fprintln(w, "sessions     none yet")
			return nil
		}
		fmt.Fprintf(w, "recent sessions (hermes -r ID to resume):\n")
		for _, s := range list {
			label := s.Title
			if label == "" {
				label = s.Preview
			}
			// A title or first prompt can come from a chat or the model:
			// its control sequences must not drive the terminal.
			label = termsafe.Clean(label)
			if len([]rune(label)) > 50 {
				label = string([]rune(label)[:49]) + "…"
			}
			fmt.Fprintf(w, "  %s  %s  %-8s %3d msgs  %s\n", s.ID, s.UpdatedAt.Local().Format("2006-01-02 15:04"), s.Source, s.MessageCount, label)
		}
		return nil
	})
}
