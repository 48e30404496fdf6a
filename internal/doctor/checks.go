package doctor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	_ "modernc.org/sqlite" // the pure-Go "sqlite" driver, as internal/store uses

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/store"
)

// checkConfig: config.yaml parses, has no unknown keys (load warnings) and
// no values that cannot work (config.Loaded.Problems, except a missing API
// key, which the provider check reports).
func checkConfig(_ context.Context, e *Env) []Result {
	path := config.ConfigPath(e.Home)
	if e.ConfigErr != nil {
		return []Result{{Status: Fail, Name: "config", Detail: e.ConfigErr.Error(),
			Fix: "edit " + path + " at the place named above (hermes config check validates it)"}}
	}
	if e.Config == nil {
		return nil
	}
	var out []Result
	for _, w := range e.Config.Warnings {
		out = append(out, Result{Status: Warn, Name: "config", Detail: w,
			Fix: "remove or rename the key in " + path + " (hermes config unset KEY)"})
	}
	for _, p := range e.Config.Problems() {
		if strings.Contains(p, " is not set for provider ") {
			continue
		}
		out = append(out, Result{Status: Fail, Name: "config", Detail: p, Fix: "hermes config set KEY VALUE with a valid value (see the message)"})
	}
	if len(out) == 0 {
		detail := path + " is valid"
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			detail = path + " does not exist; defaults apply"
		}
		out = append(out, Result{Status: OK, Name: "config", Detail: detail})
	}
	return out
}

// checkHome: HERMES_HOME exists, is not writable by others, and .env (which
// holds API keys) is mode 0600. --fix creates the directory and tightens
// the modes.
func checkHome(_ context.Context, e *Env) []Result {
	st, err := os.Stat(e.Home)
	if errors.Is(err, os.ErrNotExist) {
		r := Result{Status: Warn, Name: "HERMES_HOME", Detail: e.Home + " does not exist",
			Fix: "mkdir -m 700 " + e.Home + " (or hermes doctor --fix)"}
		if e.Fix {
			if err := os.MkdirAll(e.Home, 0o700); err != nil {
				r.Detail += ": " + err.Error()
				return []Result{r}
			}
			r = Result{Status: OK, Name: "HERMES_HOME", Detail: e.Home + " created", Fixed: true}
		}
		return []Result{r}
	}
	if err != nil {
		return []Result{{Status: Fail, Name: "HERMES_HOME", Detail: err.Error(), Fix: "make " + e.Home + " readable by you"}}
	}
	if !st.IsDir() {
		return []Result{{Status: Fail, Name: "HERMES_HOME", Detail: e.Home + " is not a directory", Fix: "move it away or point HERMES_HOME elsewhere"}}
	}
	out := []Result{modeResult(e, "HERMES_HOME", e.Home, st.Mode().Perm(), 0o022, 0o700)}
	envPath := config.DotEnvPath(e.Home)
	if st, err := os.Stat(envPath); err == nil {
		out = append(out, modeResult(e, ".env permissions", envPath, st.Mode().Perm(), 0o077, 0o600))
	}
	return out
}

// modeResult reports path's mode: ✗ when any bit of bad is set, repaired to
// want with --fix.
func modeResult(e *Env, name, path string, mode, bad, want os.FileMode) Result {
	if mode&bad == 0 {
		return Result{Status: OK, Name: name, Detail: fmt.Sprintf("%s mode %04o", path, mode)}
	}
	r := Result{Status: Fail, Name: name, Detail: fmt.Sprintf("%s is mode %04o; others can read or change it", path, mode),
		Fix: fmt.Sprintf("chmod %04o %s (or hermes doctor --fix)", want, path)}
	if e.Fix {
		// --fix changes only what is the person's own: .env may be a
		// symlink (a dotfiles manager's, or one to /etc/passwd).
		if st, err := os.Stat(path); err == nil {
			if uid := st.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Geteuid() {
				r.Detail += fmt.Sprintf("; not changed: it belongs to uid %d, not you", uid)
				r.Fix = fmt.Sprintf("check what %s is (a symlink?) and fix it by hand", path)
				return r
			}
		}
		if err := os.Chmod(path, want); err != nil {
			r.Detail += ": " + err.Error()
			return r
		}
		return Result{Status: OK, Name: name, Detail: fmt.Sprintf("%s mode %04o → %04o", path, mode, want), Fixed: true}
	}
	return r
}

// checkStore: state.db passes PRAGMA quick_check and is in WAL mode. The
// database is opened read-only, so a doctor run never migrates or locks it.
// With database.backend: postgres there is no state.db to check (the
// database check reports on PostgreSQL).
func checkStore(ctx context.Context, e *Env) []Result {
	if e.Config != nil {
		if b, err := database.BackendOf(e.Config.Config.Database); err == nil && b == database.Postgres {
			return nil
		}
	}
	path := filepath.Join(e.Home, store.FileName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return []Result{{Status: OK, Name: "state.db", Detail: path + " not created yet (the first chat creates it)"}}
	}
	fail := func(detail string) []Result {
		return []Result{{Status: Fail, Name: "state.db", Detail: detail,
			Fix: "stop running hermes processes, move " + path + " aside (sessions in it are lost) and let hermes create a new one"}}
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return fail(err.Error())
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&check); err != nil {
		return fail(path + ": " + err.Error())
	}
	if check != "ok" {
		return fail(path + ": quick_check: " + check)
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fail(path + ": " + err.Error())
	}
	out := []Result{{Status: OK, Name: "state.db", Detail: path + " passes quick_check"}}
	if !strings.EqualFold(mode, "wal") {
		out = append(out, Result{Status: Warn, Name: "state.db journal", Detail: "journal_mode is " + mode + ", not wal",
			Fix: "run any hermes chat: opening the store switches it to WAL"})
	} else {
		detail := "WAL mode"
		if st, err := os.Stat(path + "-wal"); err == nil {
			detail += fmt.Sprintf(", %s-wal is %d KiB", filepath.Base(path), st.Size()/1024)
		}
		out = append(out, Result{Status: OK, Name: "state.db journal", Detail: detail})
	}
	return out
}

// checkProvider: the chosen provider has a credential and (unless
// offline) answers GET /models listing the model.
func checkProvider(ctx context.Context, e *Env) []Result {
	if e.Config == nil {
		return []Result{{Status: Skip, Name: "provider", Detail: "skipped: the config did not load"}}
	}
	m := e.Config.Config.Model
	o := providers.Options{Provider: m.Provider, Model: m.Default, BaseURL: m.BaseURL, APIKey: m.APIKey,
		Getenv: e.Config.Getenv, HTTPClient: e.HTTPClient}
	name, err := providers.Resolve(o)
	if err != nil {
		return []Result{{Status: Warn, Name: "provider", Detail: "no provider configured", Fix: "hermes model (or hermes setup model)"}}
	}
	if name == "replay" {
		return []Result{{Status: OK, Name: "provider", Detail: "replay (plays back a recording; nothing to reach)"}}
	}
	keys := config.ProviderKeyEnv(name)
	hasKey := m.APIKey != "" || len(keys) == 0 || name == "lmstudio"
	for _, k := range keys {
		hasKey = hasKey || e.Config.Getenv(k) != ""
	}
	if !hasKey {
		return []Result{{Status: Fail, Name: "provider", Detail: fmt.Sprintf("%s has no API key (%s)", name, keys[0]),
			Fix: "hermes config set " + keys[0] + " (input hidden), or hermes setup model"}}
	}
	if m.Default == "" {
		m.Default = providers.DefaultModel(name)
		o.Model = m.Default
	}
	if m.Default == "" {
		return []Result{{Status: Fail, Name: "provider", Detail: name + ": no model chosen (model.default)", Fix: "hermes model"}}
	}
	credential := "credential present"
	if m.APIKey == "" && len(keys) == 0 {
		// A custom endpoint has no key variable: with model.api_key unset it
		// is called without a key (fine for a local server, refused by most
		// hosted ones).
		credential = "no API key set (requests go without one; set model.api_key if the endpoint needs one)"
	}
	out := []Result{{Status: OK, Name: "provider", Detail: fmt.Sprintf("%s, model %s, %s", name, m.Default, credential)}}
	switch {
	case e.Offline:
		return append(out, Result{Status: Skip, Name: "provider /models", Detail: "skipped (--offline)"})
	case name == "anthropic" || name == "minimax" || name == "minimax-cn":
		return append(out, Result{Status: Skip, Name: "provider /models", Detail: "not checked for " + name})
	}
	_, err = providers.ContextLength(ctx, o, e.timeout())
	switch {
	case err == nil || strings.Contains(err.Error(), "without a context window"):
		// OpenAI lists models without their windows: listed is enough here.
		out = append(out, Result{Status: OK, Name: "provider /models", Detail: "answers and lists " + m.Default})
	case strings.HasPrefix(err.Error(), "GET "):
		out = append(out, Result{Status: Fail, Name: "provider /models", Detail: err.Error(),
			Fix: "check the network, the base URL (model.base_url) and the key; hermes doctor --offline skips this"})
	default:
		out = append(out, Result{Status: Warn, Name: "provider /models", Detail: err.Error(),
			Fix: "check the model id (hermes model); some endpoints do not list every model"})
	}
	return out
}

// checkSkills: every skill file parses (hermes skills check).
func checkSkills(_ context.Context, e *Env) []Result {
	if e.Skills == nil {
		return nil
	}
	var out []Result
	for _, d := range e.Skills.Check() {
		st := Warn
		if d.Skipped {
			st = Fail
		}
		out = append(out, Result{Status: st, Name: "skills", Detail: d.String(), Fix: "edit or delete the file (hermes skills check)"})
	}
	if len(out) == 0 {
		out = append(out, Result{Status: OK, Name: "skills", Detail: "all skill files parse"})
	}
	return out
}
