package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/agnivade/levenshtein"
)

// field is one key of Config: a leaf value or a section (a nested struct).
type field struct {
	key     string       // dotted key, e.g. "terminal.timeout"
	index   []int        // reflect field index path from Config
	typ     reflect.Type // Go type of the field
	section bool         // a struct: holds keys, takes no value itself
}

// schema maps every dotted key of Config (from its yaml tags) to its field.
// It is derived by reflection so that fields added to Config are picked up.
type schema map[string]field

func newSchema() schema {
	s := schema{}
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || !sf.IsExported() {
				continue
			}
			key := prefix + name
			idx := append(append([]int(nil), index...), i)
			f := field{key: key, index: idx, typ: sf.Type, section: sf.Type.Kind() == reflect.Struct}
			s[key] = f
			if f.section {
				walk(sf.Type, key+".", idx)
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "", nil)
	return s
}

// keyAliases maps keys Hermes accepts under another name to ours:
// "model.model" is the documented alias of model.default, and Hermes keeps
// command_allowlist at the top level.
var keyAliases = map[string]string{
	"model.model":       "model.default",
	"command_allowlist": "approvals.command_allowlist",
	// The issue tracker's (and hermes's early) name of Hermes's title_generation task.
	"auxiliary.title":          "auxiliary.title_generation",
	"auxiliary.title.enabled":  "auxiliary.title_generation.enabled",
	"auxiliary.title.provider": "auxiliary.title_generation.provider",
	"auxiliary.title.model":    "auxiliary.title_generation.model",
	"auxiliary.title.base_url": "auxiliary.title_generation.base_url",
	"auxiliary.title.api_key":  "auxiliary.title_generation.api_key",
	"auxiliary.title.timeout":  "auxiliary.title_generation.timeout",
}

// hermesOnlyKeys are keys of Hermes Agent's config.yaml ("configuration.md")
// that this build does not use. They load silently so that a real Hermes
// config produces no noise; a key is covered when it or one of its parent
// sections is listed.
var hermesOnlyKeys = map[string]bool{
	"_config_version": true, "model_aliases": true, "providers": true, "custom_providers": true,
	"credential_pool_strategies": true, "fallback_providers": true, "fallback_model": true,
	"delegation": true, "security": true, "checkpoints": true, "code_execution": true,
	"web": true, "browser": true, "tts": true, "stt": true, "voice": true, "display": true,
	"streaming": true, "privacy": true, "tool_output": true, "file_read_max_chars": true,
	"tool_budget": true, "context_file_read_timeout": true, "tool_loop_guardrails": true,
	"prompt_caching": true, "timezone": true, "network": true, "worktree": true, "worktree_sync": true,
	"max_concurrent_sessions": true, "group_sessions_per_user": true, "unauthorized_dm_behavior": true,
	"quick_commands": true, "human_delay": true,
	"custom_toolsets": true, "hooks": true, "cron": true, "proxy": true, "secrets": true,
	"database": true, "updates": true, "runtime": true, "dashboard": true, "platforms": true,
	"tools": true, "goals": true, "onboarding": true, "context": true, "personalities": true,
	"smart_model_routing": true, "session_reset": true, "honcho": true, "kanban": true,
	"model.streaming": true, "model.persist_switch_by_default": true, "model.aliases": true,
	"model.openai_runtime":       true,
	"agent.budget_warning_ratio": true, "agent.api_max_retries": true, "agent.run_budget_seconds": true,
	"agent.reasoning_overrides": true, "agent.service_tier": true, "agent.fast_auto_seconds": true,
	"agent.tool_use_enforcement": true, "agent.execution_guidance": true, "agent.verify_on_stop": true,
	"agent.max_verify_nudges": true, "agent.stall_guards": true,
	"agent.turn_liveness": true, "agent.gateway_turn_lease_timeout": true,
	"agent.session_stall_timeout": true, "agent.reconnect_attention_after": true, "agent.agent_cache": true,
	"agent.local_stream_stale_timeout": true, "agent.image_input_mode": true, "agent.personalities": true,
	"terminal.temp_dir": true, "terminal.home_mode": true, "terminal.persistent_shell": true,
	"terminal.modal_image": true, "terminal.daytona_image": true,
	"terminal.singularity_image": true, "terminal.docker_mount_cwd_to_workspace": true,
	"terminal.docker_run_as_host_user": true, "terminal.docker_snap_compat": true,
	"terminal.docker_forward_env": true, "terminal.docker_volumes": true,
	"terminal.docker_persist_across_processes": true, "terminal.docker_shared_container_key": true,
	"terminal.docker_orphan_reaper": true, "terminal.credential_files": true,
	"terminal.modal_mode":          true,
	"compression.threshold_tokens": true, "compression.tail_mode": true, "compression.in_place": true,
	"compression.idle_compact_after_seconds": true, "compression.hygiene_hard_message_limit": true,
	"compression.context_timeout_seconds": true, "compression.context_total_ceiling_seconds": true,
	"compression.proactive_prune_tokens": true, "compression.model_thresholds": true,
	"compression.progress_notices": true,
	// Hermes's other auxiliary tasks, and the task keys this build does not use.
	"auxiliary.approval": true, "auxiliary.skills_hub": true, "auxiliary.mcp": true, "auxiliary.tts_audio_tags": true,
	"auxiliary.triage_specifier": true, "auxiliary.kanban_decomposer": true, "auxiliary.profile_describer": true,
	"auxiliary.curator": true, "auxiliary.review": true, "auxiliary.background_review": true,
	"auxiliary.stream_only_base_urls": true, "auxiliary.web_extract": true, "auxiliary.session_search": true,
	"auxiliary.title_generation.language": true, "auxiliary.title.language": true,
	"auxiliary.title_generation.reasoning_effort": true, "auxiliary.compression.reasoning_effort": true,
	"auxiliary.vision.reasoning_effort": true, "auxiliary.title_generation.extra_body": true,
	"auxiliary.compression.extra_body": true, "auxiliary.vision.extra_body": true,
	"auxiliary.title_generation.fallback_chain": true, "auxiliary.compression.fallback_chain": true,
	"auxiliary.vision.fallback_chain": true, "auxiliary.title_generation.max_concurrency": true,
	"auxiliary.compression.max_concurrency": true, "auxiliary.vision.max_concurrency": true,
	"auxiliary.title_generation.context_length": true, "auxiliary.compression.context_length": true,
	"auxiliary.vision.context_length": true, "auxiliary.vision.download_timeout": true,
	"approvals.cron_mode": true, "approvals.single_query_mode": true, "approvals.unattended_mode": true,
	"approvals.smart_policy": true, "approvals.denial_breaker_threshold": true,
	"approvals.mcp_reload_confirm": true, "approvals.destructive_slash_confirm": true,
	"memory.write_approval": true, "memory.provider": true,
	"skills.create_dir": true, "skills.write_approval": true, "skills.guard_agent_created": true,
	"skills.config": true, "skills.trusted_project_dirs": true, "skills.project_discovery": true,
	"skills.tier1_advisory": true, "skills.disabled": true, "skills.platform_disabled": true,
}

// isHermesOnly reports whether key (or a parent section of it) is a Hermes
// key this build ignores.
func isHermesOnly(key string) bool {
	for k := key; ; {
		if hermesOnlyKeys[k] {
			return true
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			return false
		}
		k = k[:i]
	}
}

// resolve returns the field for key, following keyAliases.
func (s schema) resolve(key string) (field, bool) {
	if target, ok := keyAliases[key]; ok {
		key = target
	}
	f, ok := s[key]
	return f, ok
}

// suggest returns the known key closest to an unknown one, or "": a sibling
// within a small edit distance, else a key elsewhere with the same last
// segment (e.g. "max_turns" → "agent.max_turns").
func (s schema) suggest(key string) string {
	parent, leaf := "", key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		parent, leaf = key[:i+1], key[i+1:]
	}
	var candidates []string
	for k := range s {
		candidates = append(candidates, k)
	}
	sort.Strings(candidates)
	best, bestDist := "", len(leaf)/3+2
	for _, k := range candidates {
		if !strings.HasPrefix(k, parent) || strings.Contains(k[len(parent):], ".") {
			continue
		}
		if d := levenshtein.ComputeDistance(leaf, k[len(parent):]); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return best
	}
	for _, k := range candidates {
		if strings.HasSuffix(k, "."+leaf) || (k == leaf && parent != "") {
			return k
		}
	}
	return ""
}

// misspelling returns the known sibling key that key is a close misspelling
// of (edit distance 1 or 2 of its last segment, and less than half of it),
// or "".
func (s schema) misspelling(key string) string {
	parent, leaf := "", key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		parent, leaf = key[:i+1], key[i+1:]
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	best, bestDist := "", 3
	for _, k := range keys {
		if !strings.HasPrefix(k, parent) || strings.Contains(k[len(parent):], ".") {
			continue
		}
		if d := levenshtein.ComputeDistance(leaf, k[len(parent):]); d < bestDist && 2*d < len(leaf) {
			best, bestDist = k, d
		}
	}
	return best
}

// unknownKeyMsg is the message for an unknown key, with a suggestion when
// one is close.
func (s schema) unknownKeyMsg(key string) string {
	if sug := s.suggest(key); sug != "" {
		return fmt.Sprintf("unknown key (did you mean %q?)", sug)
	}
	return "unknown key (see `hermes config show` for the keys this build uses)"
}

// typeName describes what a key of type t accepts, for error messages.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer (e.g. 180)"
	case reflect.Float64, reflect.Float32:
		return "a number (e.g. 0.5)"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Slice:
		return "a list, e.g. [a, b]"
	case reflect.Map:
		return "a mapping of keys to values"
	case reflect.Struct:
		return "a section (a mapping of keys)"
	}
	return t.String()
}
