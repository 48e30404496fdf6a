package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hermes-go/hermes/internal/egress"
)

// maxSecretBytes bounds a secret value read from stdin.
const maxSecretBytes = 64 << 10

// newSecretsCmd is `hermes secrets set|list|rm`: values the box sees only as
// placeholders, swapped for the real value by the egress proxy on requests
// to the secret's hosts (BoxLite "secrets=[Secret(name, value, hosts)]").
func (a *App) newSecretsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "manage secrets that the box sees only as placeholders",
		Args:  cobra.NoArgs,
	}
	var hosts []string
	set := &cobra.Command{
		Use:   "set NAME --hosts HOST[,HOST]",
		Short: "store a secret read from stdin; the box gets a placeholder in $NAME",
		Long: "Reads the value from stdin (not echoed on a terminal; one trailing newline is trimmed)\n" +
			"and stores it with mode 0600 in HERMES_HOME/secrets/secrets.json. Inside a box, $NAME holds\n" +
			"a placeholder that the egress proxy replaces by the value only on HTTPS requests to HOSTs\n" +
			"(exact hosts or *.suffix patterns without a port, which are also allowed through the egress\n" +
			"allowlist): in the URL, headers, body and Basic credentials (curl -u user:$NAME, git over\n" +
			"HTTPS). Responses from those hosts have the value redacted back to the placeholder, raw and\n" +
			"percent-, JSON-, base64- and hex-encoded. A host that stores what it receives and can echo\n" +
			"it back transformed could still reveal the value to the box: bind secrets to API hosts\n" +
			"that do not echo (not paste bins or debug echo services).",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.secretsSet(args[0], hosts)
		},
	}
	set.Flags().StringSliceVar(&hosts, "hosts", nil, "hosts the secret may be sent to (comma-separated; *.suffix allowed)")
	list := &cobra.Command{
		Use:   "list",
		Short: "list secret names and their hosts (never the values)",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.secretsList() },
	}
	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "delete a secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := egress.RemoveSecret(a.Home(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "removed secret %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(set, list, rm)
	return cmd
}

func (a *App) secretsSet(name string, hosts []string) error {
	if err := egress.ValidateSecretName(name); err != nil {
		return err
	}
	if len(hosts) == 0 {
		return fmt.Errorf("secret %s: --hosts is required, e.g. --hosts api.example.com[,*.example.com]", name)
	}
	for _, h := range hosts {
		if _, err := egress.ParseHostPattern(h); err != nil {
			return err
		}
	}
	value, err := a.readSecretValue(name)
	if err != nil {
		return err
	}
	if err := egress.SetSecret(a.Home(), egress.Secret{Name: name, Value: value, Hosts: hosts}); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "stored secret %s for %s in %s; boxes see only a placeholder in $%s\n",
		name, strings.Join(hosts, ","), egress.SecretsPath(a.Home()), name)
	return nil
}

// readSecretValue reads the value from stdin: without echo when stdin is a
// terminal, else the whole input less one trailing newline.
func (a *App) readSecretValue(name string) (string, error) {
	var raw []byte
	if f, ok := a.Stdin.(*os.File); ok && a.IsTerminal && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(a.Stderr, "value of %s (input hidden): ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.Stderr)
		if err != nil {
			return "", fmt.Errorf("reading the value of %s: %v", name, err)
		}
		raw = b
	} else {
		b, err := io.ReadAll(io.LimitReader(a.Stdin, maxSecretBytes+1))
		if err != nil {
			return "", fmt.Errorf("reading the value of %s from stdin: %v", name, err)
		}
		raw = b
	}
	if len(raw) > maxSecretBytes {
		return "", fmt.Errorf("secret %s: value longer than %d bytes", name, maxSecretBytes)
	}
	raw = bytes.TrimSuffix(raw, []byte("\n"))
	raw = bytes.TrimSuffix(raw, []byte("\r"))
	if len(raw) == 0 {
		return "", fmt.Errorf("secret %s: empty value; pipe it on stdin, e.g. `printf %%s \"$TOKEN\" | hermes secrets set %s --hosts HOST`", name, name)
	}
	return string(raw), nil
}

func (a *App) secretsList() error {
	all, err := egress.LoadSecrets(a.Home())
	if err != nil {
		return err
	}
	if len(all) == 0 {
		fmt.Fprintln(a.Stdout, "no secrets; add one with `hermes secrets set NAME --hosts HOST`")
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHOSTS")
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, strings.Join(s.Hosts, ","))
	}
	return tw.Flush()
}
