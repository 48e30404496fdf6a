package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/pairing"
)

// pairingPlatforms are the platforms whose users can pair.
var pairingPlatforms = []string{"telegram", "discord", "slack"}

func checkPairingPlatform(p string) (string, error) {
	p = strings.ToLower(p)
	for _, known := range pairingPlatforms {
		if p == known {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown platform %q: use one of %s", p, strings.Join(pairingPlatforms, ", "))
}

// pairingUser names a chat user as "ID" or "ID (NAME)" when the platform
// gave a name.
func pairingUser(id, name string) string {
	if name == "" {
		return id
	}
	return id + " (" + name + ")"
}

// pairingStore opens the pairing state the configuration chooses:
// HERMES_HOME/pairing/, or the database's with database.backend postgres.
func (a *App) pairingStore(ctx context.Context) (*pairing.Store, func() error, error) {
	cfg, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return nil, nil, err
	}
	docs, closeDocs, err := database.OpenPairing(ctx, cfg.Config.Database, a.Home(), cfg.Getenv)
	if err != nil {
		return nil, nil, err
	}
	return pairing.NewWith(docs, a.Now), closeDocs, nil
}

func (a *App) newPairingCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "pairing", Short: "approve chat users who asked for access with a pairing code"}
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "list pending pairing requests and approved users", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, closePairing, err := a.pairingStore(cmd.Context())
			if err != nil {
				return err
			}
			defer closePairing()
			reqs, apps, err := ps.List()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(reqs) == 0 && len(apps) == 0 {
				fmt.Fprintln(out, "No pairing requests and no paired users.")
				return nil
			}
			for _, r := range reqs {
				fmt.Fprintf(out, "pending   %-8s %s  user %s (asked %s)\n", r.Platform, r.Code, pairingUser(r.UserID, r.UserName),
					r.Created.Local().Format("2006-01-02 15:04"))
			}
			for _, ap := range apps {
				fmt.Fprintf(out, "approved  %-8s user %s (since %s)\n", ap.Platform, pairingUser(ap.UserID, ap.UserName),
					ap.Approved.Local().Format("2006-01-02 15:04"))
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use: "approve PLATFORM CODE", Short: "let the user who got CODE talk to the agent", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := checkPairingPlatform(args[0])
			if err != nil {
				return err
			}
			ps, closePairing, err := a.pairingStore(cmd.Context())
			if err != nil {
				return err
			}
			defer closePairing()
			ap, err := ps.Approve(p, args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Approved %s user %s.\n", p, pairingUser(ap.UserID, ap.UserName))
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use: "revoke PLATFORM USER_ID", Short: "take a paired user's access away", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := checkPairingPlatform(args[0])
			if err != nil {
				return err
			}
			ps, closePairing, err := a.pairingStore(cmd.Context())
			if err != nil {
				return err
			}
			defer closePairing()
			ok, err := ps.Revoke(p, args[1])
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%s user %s is not paired (hermes pairing list shows who is)", p, args[1])
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Revoked %s user %s.\n", p, args[1])
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use: "clear-pending [PLATFORM]", Short: "drop pending pairing requests", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			platforms := pairingPlatforms
			if len(args) == 1 {
				p, err := checkPairingPlatform(args[0])
				if err != nil {
					return err
				}
				platforms = []string{p}
			}
			s, closePairing, err := a.pairingStore(cmd.Context())
			if err != nil {
				return err
			}
			defer closePairing()
			for _, p := range platforms {
				if err := s.ClearPending(p); err != nil {
					return err
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "Pending pairing requests dropped.")
			return nil
		},
	})
	return cmd
}
