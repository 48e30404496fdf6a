// Package approval decides whether a terminal command may run, following
// the layers of Hermes Agent's approval system ("security.md",
// tools/approval.py):
//
//  1. a hardline list of unrecoverable commands that never run, even with
//     --yolo (rm -rf /, fork bombs, mkfs or dd onto disks, ...);
//  2. approvals.deny globs, which block even with --yolo;
//  3. --yolo, approvals.mode: off, or terminal.backend: box (the box is the
//     boundary) allow everything else;
//  4. dangerous patterns (recursive rm, chmod 777, curl | sh, writes into
//     /etc or ~/.ssh, ...) need approval
//  5. unless approvals.command_allowlist or a session approval covers them.
//
// Commands are parsed as bash (mvdan.cc/sh), so quoted text is data:
// `echo "rm -rf /"` only prints, while `sh -c 'rm -rf /'`, `eval`, `trap`,
// here-documents and here-strings fed to a shell, `echo ... | sh` and
// `$(...)` bodies are checked as commands. The check fails closed: a
// program name computed at run time (`$(echo rm)`, `x=rm; $x`) is resolved
// where the script itself fixes it and needs approval where it cannot be;
// launchers (sudo, env -S, xargs, busybox, exec -a, chroot, su -c, watch,
// find -exec, ...) are seen through; interpreter code (python -c, perl -e,
// node -e, awk, sed e) needs approval unless trivially safe; text piped
// into a shell or interpreter needs approval unless it is constant; and a
// command that cannot be parsed needs approval. Paths are resolved against
// the terminal workdir and any cd in the command, normalised (//, /./,
// .., ~user, $HOME, globs) and checked for every writer (redirections, cp
// -t, install, dd of=, tee, curl -o, wget -O, mv, ln, truncate, sed -i,
// chmod ...). Text written to a background process is checked as a
// command typed into it. hermes run by the agent needs approval, and can
// never change approvals or the terminal backend.
//
// A Service answers approval requests: at once when no approval is needed;
// by asking the attached Prompters (REPL now; TUI, ACP, gateway later) when
// it is; and by denying at once when nobody is attached (headless runs).
package approval

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/protect"
	"unicode"
	"unicode/utf8"
)

// Action is the outcome of a check.
type Action int

const (
	// Allow: the command may run.
	Allow Action = iota
	// Ask: the command needs a person's approval.
	Ask
	// Block: the command never runs (hardline or approvals.deny).
	Block
)

func (a Action) String() string {
	return [...]string{"allow", "ask", "block"}[a]
}

// Verdict is the result of Check.
type Verdict struct {
	Action Action
	// Rule names the matched rule: a hardline or dangerous-pattern key
	// ("recursive delete"), or "approvals.deny: <glob>". Empty for Allow
	// with nothing matched.
	Rule string
	// Keys are all dangerous-pattern keys that matched (Ask); approving the
	// command for the session or always records these keys.
	Keys []string
	// Reason is a sentence for the model and the person.
	Reason string
	// Hardline is set when the command is on the never-run list.
	Hardline bool
}

// Config holds the approval settings.
type Config struct {
	// Mode is approvals.mode: "manual" (default), "smart" (treated as
	// manual: no auxiliary classifier yet) or "off" (like --yolo).
	Mode string
	// Yolo is --yolo / HERMES_YOLO_MODE: skip approval prompts.
	Yolo bool
	// Isolated says the terminal backend runs commands behind a boundary of
	// its own (backend.Isolated: the box, a container, a hosted sandbox):
	// dangerous-pattern checks are skipped, as Hermes skips them for
	// container backends ("security.md").
	Isolated bool
	// Deny is approvals.deny: globs (fnmatch, case-insensitive) that block.
	Deny []string
	// Allowlist is approvals.command_allowlist: pattern keys ("recursive
	// delete") or command globs that skip the prompt.
	Allowlist []string
	// Timeout is approvals.timeout; 0 means 300 s. When it passes without an
	// answer the command is denied.
	Timeout time.Duration
	// Home is the user's home directory, HermesHome is HERMES_HOME; both
	// spell out sensitive paths (~/.ssh, HERMES_HOME/.env, HERMES_HOME/config.yaml).
	Home, HermesHome string
	// Cwd is the directory commands run in when a request names no workdir
	// (terminal.cwd); relative paths and workdirs resolve against it. ""
	// leaves relative paths relative (treated as inside the workspace).
	Cwd string
	// SaveAllowlist persists approvals.command_allowlist after an "always"
	// answer; it gets the whole new list. Nil keeps it in memory only.
	SaveAllowlist func(allowlist []string) error
	// ProtectedPaths are terminal.protected_paths (workspace-relative; a
	// trailing "/" covers a directory): writing them needs approval. Nil
	// means protect.Defaults(); an empty list protects nothing.
	ProtectedPaths []string
}

// DefaultTimeout is approvals.timeout's default.
const DefaultTimeout = 300 * time.Second

// Answer is a person's reply to a prompt.
type Answer int

const (
	// Deny refuses the command (the default).
	Deny Answer = iota
	// Once allows this one command.
	Once
	// Session allows commands matching the same rules for the rest of the session.
	Session
	// Always allows them from now on and adds them to approvals.command_allowlist.
	Always
)

func (a Answer) String() string {
	return [...]string{"deny", "once", "session", "always"}[a]
}

// ParseAnswer reads a reply as Hermes' CLI and gateway accept it: o/once,
// s/session, a/always, y/yes/approve/ok/go (once), anything else denies.
func ParseAnswer(s string) Answer {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "o", "once", "y", "yes", "approve", "ok", "go":
		return Once
	case "s", "session":
		return Session
	case "a", "always":
		return Always
	}
	return Deny
}

// Request asks to run a command or to let any other tool act. A terminal
// request sets Command; another tool names itself (Tool), what it is about
// to do (Action: "write", "delete", "send"...) and the Path or target it
// acts on, and leaves Command empty.
type Request struct {
	SessionID string
	// Tool is the model-facing tool name ("terminal", "write_file"...).
	Tool string
	// Action is what the tool is about to do, a verb ("run", "write").
	Action string
	// Path is the file or target a non-command action touches.
	Path    string
	Command string
	// Workdir is the terminal tool's workdir argument (absolute, ~/...,
	// or relative to Config.Cwd); the command's relative paths resolve
	// against it.
	Workdir string
	// Target, when set, is the command line of the background process
	// that Command is written to (the process tool's write action): the
	// text is checked as a command typed into that process (a shell, or an
	// interpreter's program text), with an unknown working directory.
	Target string
	// Reason is why the model wants to run it, shown to the person.
	Reason string
	// Uncontained marks a non-command action that takes effect outside the
	// backend's boundary (an MCP server on the host or over HTTP): an
	// isolated backend (Config.Isolated) does not skip its approval, only
	// --yolo and approvals.mode: off do.
	Uncontained bool
}

// key is the approval key of a non-command request: approving it for the
// session or always covers the same tool and action on any path.
func (r Request) key() string { return "tool " + r.Tool + " " + r.Action }

// Decision is the answer to a Request.
type Decision struct {
	Allowed bool
	// Answer is how a person answered; Once when no prompt was needed.
	Answer Answer
	// Reason explains a denial in words the model can act on.
	Reason  string
	Verdict Verdict
	// Warning is set when an "always" answer could not be saved.
	Warning string
}

// Prompt is what a Prompter shows.
type Prompt struct {
	ID        string // unique per request; Resolve takes it
	SessionID string
	Tool      string // tool asking ("terminal" for commands)
	Action    string // what it is about to do ("run", "write"...)
	Path      string // file or target of a non-command action
	Command   string
	Reason    string // the model's reason
	Rule      string // matched rule key
	Danger    string // what the command would do
}

// Prompter asks a person. Prompt blocks until the person answers or ctx
// ends (another prompter answered, the timeout passed, the turn was
// cancelled); an error means this prompter could not ask.
type Prompter interface {
	Prompt(ctx context.Context, p Prompt) (Answer, error)
}

// PrompterFunc adapts a function to Prompter.
type PrompterFunc func(ctx context.Context, p Prompt) (Answer, error)

// Prompt calls f.
func (f PrompterFunc) Prompt(ctx context.Context, p Prompt) (Answer, error) { return f(ctx, p) }

// Service is the one approval service of a process. It is safe for
// concurrent use.
type Service struct {
	cfg   Config
	deny  []denyGlob
	paths pathResolver

	mu        sync.Mutex
	allowlist []string
	session   map[string]map[string]bool // session id → approved keys
	prompters map[int]Prompter
	nextID    int
	pending   map[string]*pending
	yolo      bool

	// promptSlots holds one prompt at a time per session: a person reads
	// a session's prompts in turn, while sessions of other people (a
	// gateway's chats) are asked concurrently.
	promptSlots map[string]chan struct{}
}

// ErrNoPrompter is returned by a Prompter that has nobody to ask for this
// request (e.g. a session with no client attached). When every prompter
// says so, the request is decided as if none were attached.
var ErrNoPrompter = errors.New("nobody is attached to answer approvals")

type denyGlob struct {
	glob string
	re   interface{ MatchString(string) bool }
}

type pending struct {
	once   sync.Once
	answer chan Answer
}

// New returns a service for cfg.
func New(cfg Config) *Service {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	s := &Service{
		cfg:         cfg,
		allowlist:   slices.Clone(cfg.Allowlist),
		session:     map[string]map[string]bool{},
		prompters:   map[int]Prompter{},
		pending:     map[string]*pending{},
		yolo:        cfg.Yolo,
		promptSlots: map[string]chan struct{}{},
		paths:       newPathResolver(cfg.Home, cfg.HermesHome),
	}
	protected := cfg.ProtectedPaths
	if protected == nil {
		protected = protect.Defaults()
	}
	s.paths.protected = protect.New(protected)
	if cfg.Cwd != "" && path.IsAbs(cfg.Cwd) {
		s.paths.workspace = path.Clean(cfg.Cwd)
	}
	for _, g := range cfg.Deny {
		if strings.TrimSpace(g) != "" {
			s.deny = append(s.deny, denyGlob{glob: g, re: globRegexp(strings.TrimSpace(g))})
		}
	}
	return s
}

// SetYolo turns --yolo on or off (the REPL's /yolo).
func (s *Service) SetYolo(on bool) {
	s.mu.Lock()
	s.yolo = on
	s.mu.Unlock()
}

// Allowlist returns the current approvals.command_allowlist.
func (s *Service) Allowlist() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.allowlist)
}

// Check classifies command (run in Config.Cwd) without session approvals.
func (s *Service) Check(command string) Verdict { return s.check(Request{Command: command}) }

// CheckRequest classifies req (its command, workdir and target) without
// session approvals.
func (s *Service) CheckRequest(req Request) Verdict {
	req.SessionID = ""
	return s.check(req)
}

// workdir returns where a request's command runs.
func (s *Service) workdir(req Request) dirState {
	cwd := s.cfg.Cwd
	if cwd != "" {
		cwd = path.Clean(cwd)
	}
	dir := dirState{dirs: []string{cwd}, known: true}
	if strings.TrimSpace(req.Workdir) == "" {
		return dir
	}
	cands, known := s.paths.resolve(strings.TrimSpace(req.Workdir), dir)
	if !known || len(cands) == 0 {
		return dirState{dirs: dir.dirs, known: false}
	}
	return dirState{dirs: cands, known: true}
}

// analyzeRequest parses a request: a terminal command, or text written to
// a background process (checked as a command for that process, or as
// program text when it is an interpreter reading its program from stdin).
func (s *Service) analyzeRequest(req Request) *analysis {
	dir := s.workdir(req)
	if req.Target == "" {
		return analyze(req.Command, s.paths, dir)
	}
	unknown := dirState{dirs: dir.dirs, known: false}
	target := analyze(req.Target, s.paths, dir)
	for _, c := range target.commands {
		if lang := readsCode(c); lang != "" && lang != "shell" {
			a := &analysis{normalized: normalize(req.Command), parsed: true, paths: s.paths, dir: unknown}
			a.texts = []string{a.normalized}
			if !trivialCode(lang, a.normalized) {
				a.ask("interpreter code", "writes "+c.name()+" code that could reach the system into process "+clip(req.Target)+": "+clip(a.normalized))
			}
			return a
		}
	}
	a := analyze(req.Command, s.paths, unknown)
	for _, c := range a.commands {
		// perl typed into a shell reads its program from the next writes
		// (ended by __END__), which would be checked as shell commands
		if lang := readsCode(c); lang != "" && lang != "shell" {
			a.ask("interpreter code", "starts "+c.name()+" in process "+clip(req.Target)+", reading its program from the next writes")
		}
	}
	return a
}

func (s *Service) check(req Request) Verdict {
	sessionID, command := req.SessionID, req.Command
	if strings.TrimSpace(command) == "" {
		return Verdict{Action: Allow}
	}
	a := s.analyzeRequest(req)
	if f := hardline(a); f != nil {
		return Verdict{Action: Block, Rule: f.Key, Hardline: true,
			Reason: "blocked: " + f.Description + "; this command is on the hardline list and never runs, even with --yolo"}
	}
	for _, d := range s.deny {
		if slices.ContainsFunc(a.texts, d.re.MatchString) {
			return Verdict{Action: Block, Rule: "approvals.deny: " + d.glob,
				Reason: fmt.Sprintf("blocked by approvals.deny pattern %q in config.yaml", d.glob)}
		}
	}
	s.mu.Lock()
	yolo := s.yolo
	s.mu.Unlock()
	if yolo || strings.EqualFold(s.cfg.Mode, "off") || s.cfg.Isolated {
		return Verdict{Action: Allow}
	}
	found := s.dangerous(a)
	if len(found) == 0 {
		return Verdict{Action: Allow}
	}
	keys := make([]string, 0, len(found))
	for _, f := range found {
		keys = append(keys, f.Key)
	}
	if s.covered(sessionID, a, keys) {
		return Verdict{Action: Allow, Rule: found[0].Key, Keys: keys}
	}
	return Verdict{Action: Ask, Rule: found[0].Key, Keys: keys,
		Reason: "needs approval: " + found[0].Description + " (" + found[0].Key + ")"}
}

// covered reports whether every key is approved for the session or in the
// allowlist, or the whole command matches an allowlist glob (only for a
// command without shell operators, as Hermes does).
func (s *Service) covered(sessionID string, a *analysis, keys []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	approved := func(key string) bool {
		if s.session[sessionID][key] && sessionID != "" {
			return true
		}
		return slices.ContainsFunc(s.allowlist, func(e string) bool { return strings.EqualFold(strings.TrimSpace(e), key) })
	}
	if !slices.ContainsFunc(keys, func(k string) bool { return !approved(k) }) {
		return true
	}
	if strings.ContainsAny(a.normalized, ";&|<>`\n") || strings.Contains(a.normalized, "$(") {
		return false
	}
	for _, e := range s.allowlist {
		if strings.ContainsAny(e, "*?[") && globRegexp(strings.TrimSpace(e)).MatchString(a.normalized) {
			return true
		}
	}
	return false
}

// Attach adds a prompter; the returned func detaches it. With several
// attached, each is asked and the first answer wins.
func (s *Service) Attach(p Prompter) (detach func()) {
	s.mu.Lock()
	id := s.nextID
	s.nextID++
	s.prompters[id] = p
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.prompters, id)
		s.mu.Unlock()
	}
}

// Resolve answers the pending prompt id (for UIs that answer
// asynchronously, such as a gateway's /approve). It reports whether the
// prompt was still waiting; the first answer wins.
func (s *Service) Resolve(id string, a Answer) bool {
	s.mu.Lock()
	p := s.pending[id]
	s.mu.Unlock()
	if p == nil {
		return false
	}
	won := false
	p.once.Do(func() { p.answer <- a; won = true })
	return won
}

var errApprovalTimeout = errors.New("approvals.timeout passed")

// headlessReason is what the model reads when nobody can approve. The
// box is offered only where it would skip the approval: not for an
// uncontained action (an MCP server over HTTP or on the host).
func headlessReason(req Request) string {
	if req.Uncontained {
		return "; nobody can approve it in this run, so it was not run. Rerun with --yolo, or do the task another way"
	}
	return "; nobody can approve it in this run, so it was not run. Rerun with --yolo or use terminal.backend: box, or do the task another way"
}

// checkRequest classifies a command request with Check's rules, and any
// other tool's action as needing approval unless approvals are off (yolo,
// mode off, box backend) or the session or allowlist covers tool+action.
func (s *Service) checkRequest(req Request) Verdict {
	if req.Command != "" || req.Tool == "" || req.Tool == "terminal" {
		return s.check(req)
	}
	s.mu.Lock()
	yolo := s.yolo
	s.mu.Unlock()
	if yolo || strings.EqualFold(s.cfg.Mode, "off") || (s.cfg.Isolated && !req.Uncontained) {
		return Verdict{Action: Allow}
	}
	key := req.key()
	s.mu.Lock()
	covered := s.session[req.SessionID][key] && req.SessionID != "" ||
		slices.ContainsFunc(s.allowlist, func(e string) bool { return strings.EqualFold(strings.TrimSpace(e), key) })
	s.mu.Unlock()
	if covered {
		return Verdict{Action: Allow, Rule: key, Keys: []string{key}}
	}
	what := req.Tool + " wants to " + req.Action
	if req.Path != "" {
		what += " " + req.Path
	}
	return Verdict{Action: Ask, Rule: key, Keys: []string{key}, Reason: "needs approval: " + what}
}

// slot returns the prompt slot of a session.
func (s *Service) slot(sessionID string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.promptSlots[sessionID]
	if c == nil {
		c = make(chan struct{}, 1)
		s.promptSlots[sessionID] = c
	}
	return c
}

// Forget drops a session's approvals and prompt slot (the session closed).
func (s *Service) Forget(sessionID string) {
	s.mu.Lock()
	delete(s.session, sessionID)
	if c := s.promptSlots[sessionID]; c != nil && len(c) == 0 {
		delete(s.promptSlots, sessionID)
	}
	s.mu.Unlock()
}

// Request decides whether req may run, asking a person when needed. It
// never blocks without a prompter, and fails closed after
// approvals.timeout. The error is ctx.Err() when ctx ends first.
func (s *Service) Request(ctx context.Context, req Request) (Decision, error) {
	if req.Tool == "" && req.Command != "" {
		req.Tool, req.Action = "terminal", "run"
	}
	v := s.checkRequest(req)
	switch v.Action {
	case Allow:
		return Decision{Allowed: true, Answer: Once, Verdict: v}, nil
	case Block:
		return Decision{Reason: v.Reason, Verdict: v}, nil
	}
	s.mu.Lock()
	prompters := make([]Prompter, 0, len(s.prompters))
	for _, p := range s.prompters {
		prompters = append(prompters, p)
	}
	s.mu.Unlock()
	if len(prompters) == 0 {
		return Decision{Reason: v.Reason + headlessReason(req), Verdict: v}, nil
	}

	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.Timeout, errApprovalTimeout)
	defer cancel()
	timedOut := func() (Decision, error) {
		if errors.Is(context.Cause(ctx), errApprovalTimeout) {
			return Decision{Verdict: v, Reason: v.Reason + fmt.Sprintf("; no answer within approvals.timeout (%s), so it was denied", s.cfg.Timeout)}, nil
		}
		return Decision{Verdict: v, Reason: "cancelled while waiting for approval"}, ctx.Err()
	}
	// One prompt at a time per session: a person reads them in turn.
	slot := s.slot(req.SessionID)
	select {
	case slot <- struct{}{}:
		defer func() { <-slot }()
	case <-ctx.Done():
		return timedOut()
	}
	// An earlier prompt may have approved these keys for the session.
	if v2 := s.checkRequest(req); v2.Action == Allow {
		return Decision{Allowed: true, Answer: Session, Verdict: v2}, nil
	}

	s.mu.Lock()
	id := strconv.Itoa(s.nextID)
	s.nextID++
	p := &pending{answer: make(chan Answer, 1)}
	s.pending[id] = p
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()

	prompt := Prompt{ID: id, SessionID: req.SessionID, Tool: req.Tool, Action: req.Action, Path: req.Path,
		Command: req.Command, Reason: req.Reason, Rule: v.Rule, Danger: v.Reason}
	askCtx, stopAsking := context.WithCancel(ctx)
	defer stopAsking()
	failed := make(chan error, len(prompters))
	for _, pr := range prompters {
		go func() {
			a, err := pr.Prompt(askCtx, prompt)
			if err != nil {
				failed <- err
				return
			}
			s.Resolve(id, a)
		}()
	}
	var errs []error
	absent := 0
	for {
		select {
		case a := <-p.answer:
			stopAsking()
			return s.apply(req.SessionID, v, a), nil
		case err := <-failed:
			if ctx.Err() != nil {
				return timedOut()
			}
			errs = append(errs, err)
			if errors.Is(err, ErrNoPrompter) {
				absent++
			}
			if absent == len(prompters) {
				return Decision{Reason: v.Reason + headlessReason(req), Verdict: v}, nil
			}
			if len(errs) == len(prompters) {
				return Decision{Verdict: v, Reason: v.Reason + "; the approval prompt failed (" + errors.Join(errs...).Error() + "), so it was denied"}, nil
			}
		case <-ctx.Done():
			return timedOut()
		}
	}
}

// apply records an answer and turns it into a decision.
func (s *Service) apply(sessionID string, v Verdict, a Answer) Decision {
	d := Decision{Allowed: a != Deny, Answer: a, Verdict: v}
	switch a {
	case Deny:
		d.Reason = "the user denied this (" + v.Rule + "); do not retry it, ask the user or take another way"
	case Session:
		s.mu.Lock()
		if s.session[sessionID] == nil {
			s.session[sessionID] = map[string]bool{}
		}
		for _, k := range v.Keys {
			s.session[sessionID][k] = true
		}
		s.mu.Unlock()
	case Always:
		s.mu.Lock()
		for _, k := range v.Keys {
			if !slices.Contains(s.allowlist, k) {
				s.allowlist = append(s.allowlist, k)
			}
		}
		list := slices.Clone(s.allowlist)
		s.mu.Unlock()
		if s.cfg.SaveAllowlist != nil {
			if err := s.cfg.SaveAllowlist(list); err != nil {
				d.Warning = "approved, but approvals.command_allowlist could not be saved: " + err.Error()
			}
		}
	}
	return d
}

// What is the line a person reads to decide: the command, or the tool,
// action and target of another request, with terminal controls made
// visible (see Printable). The command and the target come from the model
// and a tool server's names: an escape sequence in them (erase line,
// cursor up, hidden or black-on-black text) could otherwise show a
// harmless command in place of the one that runs.
func (p Prompt) What() string {
	if p.Command != "" {
		return Printable(p.Command)
	}
	return Printable(strings.TrimSpace(p.Tool + " " + p.Action + " " + p.Path))
}

// Printable shows s with what a terminal would interpret escaped as Go
// escapes (\x1b, \r, \u202e): C0 controls other than newline and tab,
// DEL, C1 controls, bidi controls, line and paragraph separators, and
// invalid UTF-8.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if unprintable(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unprintable(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unprintable(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}
