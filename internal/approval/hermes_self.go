package approval

import (
	"slices"
	"strings"
)

// hermesReadOnly are the `hermes` subcommands an agent may run unasked:
// they only read (version, help, config show/get/path/check, listings).
var hermesReadOnly = map[string][]string{
	"version": nil, "help": nil, "doctor": nil, "status": nil, "insights": nil,
	"config":   {"show", "get", "path", "env-path", "check"},
	"egress":   {"list", "status"},
	"secrets":  {"list"},
	"sessions": {"list", "show", "export", "search"},
	"skills":   {"list", "show", "check"},
	"box":      {"ls", "stats", "snapshots"},
}

// protectedKeys are config keys hermes run by the agent may never change:
// the approval settings and where (and how confined) commands run.
func protectedKey(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	if k == "" || strings.Contains(k, "$") {
		return true
	}
	for _, p := range []string{"approvals", "terminal", "terminal.backend", "terminal.local_sandbox", "terminal.writable_paths", "terminal.protected_paths", "terminal.env_passthrough", "box"} {
		if k == p || strings.HasPrefix(k, p+".") && (p != "terminal") {
			return true
		}
	}
	return false
}

// hermesSelf classifies hermes run by the agent (args[0] is hermes): block
// is set for a change of approvals or the terminal backend (hardline),
// ask for anything that is not read-only.
func hermesSelf(args []string) (block, ask *finding) {
	var words []string
	yolo := false
	for _, a := range args[1:] {
		switch {
		case a == "--yolo":
			yolo = true
		case strings.HasPrefix(a, "-"):
		default:
			words = append(words, a)
		}
	}
	if len(words) >= 2 && words[0] == "config" && slices.Contains([]string{"set", "unset", "reset", "edit"}, words[1]) {
		key := ""
		if len(words) > 2 {
			key = words[2]
		}
		if k, _, ok := strings.Cut(key, "="); ok {
			key = k
		}
		if words[1] == "edit" || words[1] == "reset" || protectedKey(key) {
			return &finding{"hermes changes its own safety settings", "`hermes config " + words[1] + " " + key + "` would change the approval or sandbox settings; only the user may do that, outside the agent"}, nil
		}
	}
	if len(words) >= 1 && words[0] == "approvals" {
		return &finding{"hermes changes its own safety settings", "`hermes approvals` run by the agent would change the approval settings; only the user may do that"}, nil
	}
	if yolo {
		return nil, &finding{"hermes self", "runs hermes with --yolo, an agent without approvals"}
	}
	if len(words) == 0 {
		if len(args) > 1 && slices.ContainsFunc(args[1:], func(a string) bool { return a == "--version" || a == "-V" || a == "--help" || a == "-h" }) {
			return nil, nil
		}
		return nil, &finding{"hermes self", "runs hermes itself"}
	}
	subs, ok := hermesReadOnly[words[0]]
	if ok && (subs == nil || len(words) > 1 && slices.Contains(subs, words[1])) {
		return nil, nil
	}
	return nil, &finding{"hermes self", "runs `hermes " + strings.Join(words[:min(2, len(words))], " ") + "`, which changes hermes's own settings, secrets or state"}
}
