package approval

import (
	"slices"
	"strings"
)

// gitCommandKeys are git config keys whose value git runs as a command.
var gitCommandKeys = []string{"alias.", "core.sshcommand", "core.pager", "core.editor", "core.fsmonitor", "core.hookspath", "core.gitproxy", "core.askpass", "diff.external", "credential.helper", "sequence.editor", "uploadpack.packobjectshook", "protocol.ext.allow", "gpg.program", "filter.", "merge.", "difftool.", "mergetool.", "pager.", "init.templatedir"}

// commandOptions lists, per program, options whose value is a command the
// program runs (tar --to-command, rsync -e, ssh -o ProxyCommand=...).
var commandOptions = map[string][]string{
	"tar":    {"--to-command", "--checkpoint-action", "--use-compress-program", "-I", "--info-script", "--new-volume-script", "-F", "--rsh-command"},
	"rsync":  {"-e", "--rsh", "--rsync-path"},
	"zip":    {"-TT", "--unzip-command"},
	"vim":    {"-c", "--cmd"},
	"vi":     {"-c", "--cmd"},
	"nvim":   {"-c", "--cmd"},
	"less":   {"+!"},
	"man":    {"-P", "--pager", "-H", "--html"},
	"git":    {"--upload-pack", "--receive-pack", "--exec", "-u"},
	"scp":    {"-S", "-o"},
	"ssh":    {"-o"},
	"sftp":   {"-S", "-o"},
	"docker": {"--entrypoint"},
}

// runsConfiguredCommand reports a program told by an option to run another
// command that the check cannot see: git -c alias.x='!...', tar
// --to-command, rsync -e, ssh -o ProxyCommand, vim -c '!...'.
func runsConfiguredCommand(args []string) *finding {
	name := baseName(args[0])
	if name == "git" && subcommand(args) == "config" {
		// git config [--global] core.pager 'sh -c ...': the next git
		// command anywhere runs it
		i := slices.Index(args, "config")
		for _, a := range args[i+1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			key := strings.ToLower(a)
			if slices.ContainsFunc(gitCommandKeys, func(k string) bool { return strings.HasPrefix(key, k) }) {
				return &finding{"runs configured command", "git config " + clip(a) + " sets a command git will run"}
			}
			break
		}
	}
	if name == "git" {
		switch subcommand(args) {
		case "init", "clone", "submodule":
			// git init --template=DIR copies DIR's config and hooks into
			// the new repository's .git (a nested one runs its
			// core.fsmonitor on the user's `git status` at the top)
			if t := optionValues(args, "", "--template"); len(t) > 0 {
				return &finding{"write to protected path", "git --template=" + clip(t[0]) + " copies that directory's config and hooks into a new .git: it can make the host run code later"}
			}
		}
		for _, kv := range optionValues(args, "c", "--config-env") {
			key := strings.ToLower(kv)
			// core.* also covers core.worktree, core.hookspath and the
			// keys git adds later that run or redirect
			if strings.HasPrefix(key, "core.") || slices.ContainsFunc(gitCommandKeys, func(k string) bool { return strings.HasPrefix(key, k) }) {
				return &finding{"runs configured command", "git -c " + clip(kv) + " makes git run a command"}
			}
		}
	}
	optsRun := commandOptions[name]
	for i, a := range args[1:] {
		opt, val, _ := strings.Cut(a, "=")
		for _, o := range optsRun {
			if opt != o && !(len(o) == 2 && strings.HasPrefix(a, o) && len(a) > 2 && o != "-o") {
				continue
			}
			if (name == "ssh" || name == "scp" || name == "sftp") && o == "-o" {
				if val == "" && i+2 < len(args) {
					val = args[i+2]
				}
				if v := strings.ToLower(strings.TrimPrefix(a, "-o") + val); !strings.Contains(v, "proxycommand") && !strings.Contains(v, "localcommand") && !strings.Contains(v, "knownhostscommand") {
					continue
				}
			}
			return &finding{"runs configured command", name + " " + a + " runs a command the check cannot see"}
		}
	}
	return nil
}

// runsWrittenFile reports a command that runs a file an earlier part of the
// same command writes: `echo 'rm -rf ~' > x.sh; bash x.sh`, `... > x;
// chmod +x x; ./x`, `... > m.py && python3 m.py`.
func (a *analysis) runsWrittenFile() *finding {
	written := map[string]bool{}
	add := func(p string, dir dirState) {
		cands, _ := a.paths.resolve(p, dir)
		for _, c := range cands {
			written[c] = true
		}
	}
	for _, t := range a.redirects {
		add(t.path, t.dir)
	}
	for _, c := range a.commands {
		for _, t := range writeTargets(c.args) {
			add(t, c.dir)
		}
	}
	if len(written) == 0 {
		return nil
	}
	for _, c := range a.commands {
		var run []string
		name := c.name()
		switch {
		case strings.Contains(c.args[0], "/"):
			run = append(run, c.args[0])
		case isShell(name):
			run = append(run, shellScriptOperand(c.args))
		case name == "source" || name == ".":
			if len(c.args) > 1 {
				run = append(run, c.args[1])
			}
		default:
			if lang := interpreterLang(name); lang != "" {
				_, _, script := interpreterCode(lang, c.args)
				run = append(run, script)
				run = append(run, optionValues(c.args, "f", "--file")...)
			}
		}
		for _, r := range run {
			if r == "" {
				continue
			}
			cands, _ := a.paths.resolve(r, c.dir)
			if slices.ContainsFunc(cands, func(p string) bool { return written[p] }) {
				return &finding{"runs a file it writes", name + " runs " + r + ", which this command writes first, so what runs cannot be checked"}
			}
		}
	}
	return nil
}
