package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/hermes-go/hermes/internal/lazyregexp"
	"github.com/hermes-go/hermes/internal/protect"
)

// allowedValues returns the values an enumerated key accepts, in the order
// they are shown, and whether "" (meaning "the default") is also accepted;
// nil for a free-form key. The sets are Hermes' ("configuration.md")
// narrowed to what this build implements: terminal.backend TerminalBackends(),
// terminal.box_workspace bind|overlay, terminal.local_sandbox
// workspace-write|read-only|off, approvals.mode manual|smart|off,
// model.provider one of Providers() or auto, model.api_mode
// chat_completions|anthropic_messages, agent.reasoning_effort
// none|minimal|low|medium|high|xhigh.
// TerminalBackends are the terminal.backend values this build runs
// (Hermes's names; "box" is hermes's own sandbox).
func TerminalBackends() []string {
	return []string{"local", "box", "ssh", "docker", "vercel_sandbox", "e2b"}
}

func allowedValues(key string) (values []string, emptyOK bool) {
	switch key {
	case "terminal.backend":
		return TerminalBackends(), false
	case "terminal.box_workspace":
		return []string{"bind", "overlay"}, false
	case "terminal.local_sandbox":
		return []string{"workspace-write", "read-only", "off"}, false
	case "approvals.mode":
		return []string{"manual", "smart", "off"}, false
	case "model.provider":
		return append(Providers(), "auto"), true
	case "model.api_mode":
		return []string{"chat_completions", "anthropic_messages"}, true
	case "agent.reasoning_effort":
		return []string{"none", "minimal", "low", "medium", "high", "xhigh"}, true
	case "unauthorized_dm_behavior":
		return []string{"pair", "ignore"}, true
	}
	return nil, false
}

// fractionKeys are the keys whose value is a fraction from 0 to 1.
func isFractionKey(key string) bool {
	return key == "compression.threshold" || key == "compression.target_ratio"
}

// checkValue reports a value of the right type that key still cannot
// take: a value outside an enumerated set (naming the allowed ones and
// the closest), a negative number (every count, size and duration in
// Config), or a fraction outside 0..1. It returns nil or an *Error naming
// the key.
// MaxSpawnDepth is the most levels of subagents delegation.max_spawn_depth
// allows below a session (Hermes's limit, README).
const MaxSpawnDepth = 2

// MessagingPlatforms are the chat platforms hermes can message (the
// gateway's adapters and send_message): telegram, discord, slack.
func MessagingPlatforms() []string { return []string{"telegram", "discord", "slack"} }

// messageTarget matches "<platform>:<chat_id>[:<thread_id>]" (as
// tool.targetPattern and cron's deliver targets).
var messageTarget = lazyregexp.New(`^[a-z][a-z0-9_]*:[^:\s]+(:[^:\s]+)?$`)

func checkValue(key string, v reflect.Value) error {
	if allowed, emptyOK := allowedValues(key); allowed != nil && v.Kind() == reflect.String {
		s := v.String()
		if slices.Contains(allowed, s) || (s == "" && emptyOK) {
			return nil
		}
		msg := fmt.Sprintf("%q is not one of %s", s, strings.Join(allowed, ", "))
		if sug := closestValue(s, allowed); sug != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		if s == "" {
			msg += fmt.Sprintf("; to go back to the default run `hermes config unset %s`", key)
		}
		return &Error{Key: key, Msg: msg}
	}
	if key == "terminal.writable_paths" && v.Kind() == reflect.Slice {
		for i := 0; i < v.Len(); i++ {
			if p := v.Index(i).String(); !strings.HasPrefix(p, "/") && p != "~" && !strings.HasPrefix(p, "~/") {
				return &Error{Key: key, Msg: fmt.Sprintf("%q is not an absolute path; write it as /dir or ~/dir", p)}
			}
		}
	}
	if list, ok := v.Interface().([]FallbackProvider); ok {
		if len(list) > MaxFallbackProviders {
			return &Error{Key: key, Msg: fmt.Sprintf("%d entries; at most %d are tried", len(list), MaxFallbackProviders)}
		}
		for i, f := range list {
			if err := f.Check(i); err != nil {
				return err
			}
		}
	}
	if key == "messaging.allowed_targets" && v.Kind() == reflect.Slice {
		for i := 0; i < v.Len(); i++ {
			t := v.Index(i).String()
			if !messageTarget().MatchString(t) {
				return &Error{Key: key, Msg: fmt.Sprintf("%q is not a chat; write it as <platform>:<chat_id>[:<thread_id>], e.g. telegram:-1001234567890", t)}
			}
			if p, _, _ := strings.Cut(t, ":"); !slices.Contains(MessagingPlatforms(), p) {
				msg := fmt.Sprintf("%q: hermes cannot message platform %q; use one of %s", t, p, strings.Join(MessagingPlatforms(), ", "))
				if sug := closestValue(p, MessagingPlatforms()); sug != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", sug+strings.TrimPrefix(t, p))
				}
				return &Error{Key: key, Msg: msg}
			}
		}
	}
	if key == "terminal.protected_paths" && v.Kind() == reflect.Slice {
		for i := 0; i < v.Len(); i++ {
			if err := protect.Validate(v.Index(i).String()); err != nil {
				return &Error{Key: key, Msg: err.Error()}
			}
		}
	}
	if key == "model.base_url" && v.Kind() == reflect.String && v.String() != "" {
		// ${VAR} references are resolved at load time and checked there.
		if s := v.String(); !strings.HasPrefix(s, "${") {
			if err := CheckBaseURL(s); err != nil {
				return &Error{Key: key, Msg: err.Error()}
			}
		}
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		if v.Int() < 0 {
			return &Error{Key: key, Msg: fmt.Sprintf("must not be negative, got %d (0 means the default)", v.Int())}
		}
		if key == "delegation.max_spawn_depth" && v.Int() > MaxSpawnDepth {
			return &Error{Key: key, Msg: fmt.Sprintf("must be between 1 and %d, got %d (1: subagents cannot delegate; %d: their children can, once)",
				MaxSpawnDepth, v.Int(), MaxSpawnDepth)}
		}
	case reflect.Float64, reflect.Float32:
		f := v.Float()
		if isFractionKey(key) && (f < 0 || f > 1) {
			return &Error{Key: key, Msg: fmt.Sprintf("must be a fraction between 0 and 1 (e.g. 0.5), got %g", f)}
		}
		if f < 0 {
			return &Error{Key: key, Msg: fmt.Sprintf("must not be negative, got %g", f)}
		}
	}
	return nil
}

// closestValue returns the allowed value a mistyped one most likely
// meant: the same in another case, one it is a prefix of, or one within a
// small edit distance; "" when none is close.
func closestValue(s string, allowed []string) string {
	lower := strings.ToLower(strings.TrimSpace(s))
	if lower == "" {
		return ""
	}
	best, bestDist := "", max(2, len(lower)/3)+1
	for _, a := range allowed {
		if a == lower || strings.HasPrefix(a, lower) {
			return a
		}
		if d := levenshtein.ComputeDistance(lower, a); d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

// CheckString reports a string value that key cannot take (see checkValue),
// as an *Error naming the key; nil when it is allowed.
func CheckString(key, value string) error {
	return checkValue(key, reflect.ValueOf(value))
}
