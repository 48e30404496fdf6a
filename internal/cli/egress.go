package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/egress"
)

// Config keys of the box egress lists.
const (
	egressAllowKey  = "terminal.box_network.allow"
	egressDenyKey   = "terminal.box_network.deny"
	egressCAFileKey = "terminal.box_network.ca_file"
)

// egressEntryForms is the help text of the entry forms, shared by allow
// and deny.
const egressEntryForms = "Entries: an exact host (api.example.com), *.suffix (subdomains only, not the apex), \"*\" (any\n" +
	"host), an IP or a CIDR. Add :PORT to cover one port only: api.example.com:443, *:443,\n" +
	"127.0.0.1:8080, [::1]:8080, 10.0.0.0/8:5432 (IPv6 with a port needs brackets). Without a port\n" +
	"an entry covers every port."

// newEgressCmd is `hermes egress allow|deny|list|status`: the allowlist of
// the box's egress proxy, kept in config.yaml terminal.box_network.
func (a *App) newEgressCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "egress",
		Short: "manage the box egress allowlist",
		Long: "Boxes reach the network only through hermes's egress proxy.\n" + egressEntryForms + "\n" +
			"Deny entries win. Loopback, private, CGNAT, link-local/metadata and ULA addresses are\n" +
			"refused unless an IP or CIDR inside that range is allowed explicitly; the host's own\n" +
			"interface addresses only when that exact IP is allowed (\"*\" and CIDRs never open them).\n" +
			"IPv4 written as IPv6 (::ffff:a.b.c.d, 64:ff9b::a.b.c.d NAT64) is judged as the IPv4.\n\n" +
			"Upstreams of secret hosts (TLS intercepted) are verified against the system roots plus\n" +
			"the PEM bundle in " + egressCAFileKey + ", for a private CA:\n" +
			"  hermes config set " + egressCAFileKey + " /etc/ssl/private-ca.pem\n" +
			"(a relative path is relative to HERMES_HOME). Other hosts are tunnelled blind, so the\n" +
			"client inside the box verifies them against the box's trust store.",
		Args: cobra.NoArgs,
	}
	var removeAllow, removeDeny bool
	allow := &cobra.Command{
		Use:   "allow HOST|*.SUFFIX|*|IP|CIDR[:PORT]...",
		Short: "allow destinations (and drop them from the deny list)",
		Long: "Adds entries to " + egressAllowKey + " (and drops them from the deny list).\n" + egressEntryForms + "\n" +
			"Examples:\n  hermes egress allow pypi.org *.pythonhosted.org\n  hermes egress allow api.example.com:443\n" +
			"  hermes egress allow 127.0.0.1:8080 [::1]:8080   # one port of the host's loopback",
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.egressEdit(egressAllowKey, egressDenyKey, args, removeAllow)
		},
	}
	allow.Flags().BoolVar(&removeAllow, "remove", false, "remove the entries from the allow list instead")
	deny := &cobra.Command{
		Use:   "deny HOST|*.SUFFIX|*|IP|CIDR[:PORT]...",
		Short: "deny destinations (deny wins over allow; drops them from the allow list)",
		Long:  "Adds entries to " + egressDenyKey + " (and drops them from the allow list); deny wins.\n" + egressEntryForms,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.egressEdit(egressDenyKey, egressAllowKey, args, removeDeny)
		},
	}
	deny.Flags().BoolVar(&removeDeny, "remove", false, "remove the entries from the deny list instead")
	list := &cobra.Command{
		Use:   "list",
		Short: "show the allow and deny lists and the hosts of secrets",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := a.egressPrintLists()
			return err
		},
	}
	var last int
	status := &cobra.Command{
		Use:   "status",
		Short: "show the lists, the audit log path and the last decisions",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.egressStatus(last) },
	}
	status.Flags().IntVarP(&last, "last", "n", 20, "number of recent decisions to show")
	cmd.AddCommand(allow, deny, list, status)
	return cmd
}

// egressEdit adds entries to the list at key (dropping them from the list
// at other), or removes them from key when remove is set. Entries are
// validated and normalised first; on any bad entry nothing is written.
func (a *App) egressEdit(key, other string, entries []string, remove bool) error {
	var norm []string
	for _, e := range entries {
		r, err := egress.ParseRule(e)
		if err != nil {
			return err
		}
		norm = append(norm, r.String())
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	lists := map[string][]string{
		egressAllowKey: cfg.Config.Terminal.BoxNetwork.Allow,
		egressDenyKey:  cfg.Config.Terminal.BoxNetwork.Deny,
	}
	verb := map[string]string{egressAllowKey: "allowed", egressDenyKey: "denied"}[key]
	if remove {
		var missing []string
		for _, e := range norm {
			if !slices.Contains(lists[key], e) {
				missing = append(missing, e)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%s has no entry %s (see `hermes egress list`)", key, strings.Join(missing, ", "))
		}
		if err := a.setEgressList(key, slices.DeleteFunc(slices.Clone(lists[key]), func(e string) bool { return slices.Contains(norm, e) })); err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "no longer %s: %s\n", verb, strings.Join(norm, ", "))
		return nil
	}
	updated := slices.Clone(lists[key])
	for _, e := range norm {
		if !slices.Contains(updated, e) {
			updated = append(updated, e)
		}
	}
	var dropped []string
	otherList := slices.DeleteFunc(slices.Clone(lists[other]), func(e string) bool {
		if slices.Contains(norm, e) {
			dropped = append(dropped, e)
			return true
		}
		return false
	})
	if err := a.setEgressList(key, updated); err != nil {
		return err
	}
	if len(dropped) > 0 {
		if err := a.setEgressList(other, otherList); err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "removed from %s: %s\n", other, strings.Join(dropped, ", "))
	}
	fmt.Fprintf(a.Stdout, "%s: %s (%s in %s; running boxes pick it up when they are recreated)\n",
		verb, strings.Join(norm, ", "), key, config.ConfigPath(a.Home()))
	return nil
}

func (a *App) setEgressList(key string, list []string) error {
	if list == nil {
		list = []string{}
	}
	b, _ := json.Marshal(list) // JSON is YAML; quoting keeps "*.x" from reading as an alias
	return config.Set(a.Home(), key, string(b))
}

// egressPrintLists prints the lists and secret hosts; it returns the
// loaded config for status.
func (a *App) egressPrintLists() (*config.Loaded, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	show := func(label string, list []string) {
		if len(list) == 0 {
			fmt.Fprintf(a.Stdout, "%s: (none)\n", label)
			return
		}
		fmt.Fprintf(a.Stdout, "%s:\n", label)
		for _, e := range list {
			fmt.Fprintf(a.Stdout, "  %s\n", printable(e))
		}
	}
	showRules := func(label string, list []string) {
		if len(list) == 0 {
			fmt.Fprintf(a.Stdout, "%s: (none)\n", label)
			return
		}
		fmt.Fprintf(a.Stdout, "%s:\n", label)
		tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
		for _, e := range list {
			r, err := egress.ParseRule(e)
			if err != nil {
				fmt.Fprintf(tw, "  %s\tinvalid: %s\n", printable(e), printable(err.Error()))
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\n", printable(e), r.PortsText())
		}
		tw.Flush()
	}
	nw := cfg.Config.Terminal.BoxNetwork
	showRules("allow ("+egressAllowKey+")", nw.Allow)
	showRules("deny ("+egressDenyKey+")", nw.Deny)
	if nw.CAFile != "" {
		fmt.Fprintf(a.Stdout, "upstream CA file (%s): %s\n", egressCAFileKey, nw.CAFile)
	}
	secrets, err := egress.LoadSecrets(a.Home())
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, s := range secrets {
		hosts = append(hosts, strings.Join(s.Hosts, ",")+" ("+s.Name+", TLS intercepted)")
	}
	show("secret hosts (allowed implicitly)", hosts)
	return cfg, nil
}

func (a *App) egressStatus(last int) error {
	if _, err := a.egressPrintLists(); err != nil {
		return err
	}
	path := egress.AuditPath(a.Home())
	fmt.Fprintf(a.Stdout, "audit log: %s\n", path)
	tail, err := egress.ReadAuditTail(path, last)
	if err != nil {
		return err
	}
	if tail.Oversized > 0 || tail.Unparsed > 0 {
		fmt.Fprintf(a.Stdout, "skipped %d oversized and %d unreadable lines of the audit log\n", tail.Oversized, tail.Unparsed)
	}
	recs := tail.Records
	if len(recs) == 0 {
		fmt.Fprintln(a.Stdout, "no decisions logged yet")
		return nil
	}
	fmt.Fprintf(a.Stdout, "last %d decisions:\n", len(recs))
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tBOX\tDECISION\tPROTO\tMETHOD\tDESTINATION\tBYTES OUT/IN\tREASON")
	for _, r := range recs {
		reason := r.Reason
		if r.Error != "" {
			reason += " (error: " + r.Error + ")"
		}
		if r.Suppressed > 0 {
			reason += fmt.Sprintf(" (%d identical lines before this one not logged)", r.Suppressed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n",
			r.Time.Local().Format("2006-01-02 15:04:05"), printable(r.Box), printable(r.Decision), printable(r.Proto),
			printable(r.Method), printable(net.JoinHostPort(r.Host, strconv.Itoa(r.Port))+r.Path), r.BytesOut, r.BytesIn,
			printable(reason))
	}
	return tw.Flush()
}

// printable escapes what a terminal would interpret in text read from a
// file a box can influence (the audit log): control characters (C0, DEL,
// C1; tab and newline too, which would forge columns and rows), bidi
// controls and invalid UTF-8 are shown as Go escapes (\x1b, \u202e).
func printable(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029':
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
