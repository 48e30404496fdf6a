package approval

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// finding is one rule that matched: Key names the rule (it is what session
// approvals and command_allowlist entries refer to, as Hermes'
// pattern keys), Description says what the command would do.
type finding struct {
	Key         string
	Description string
}

// systemDirs are the top-level directories whose recursive removal leaves
// the machine unusable; with "/" and the home directory they are the
// hardline rm/chmod/chown/find targets.
var systemDirs = []string{"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "opt", "proc", "root", "sbin", "srv", "sys", "usr", "var"}

// isCriticalTarget reports whether a path argument names /, a top-level
// system directory, or the home directory (~, $HOME), possibly with a
// trailing slash, "/." or a "/*" glob.
func isCriticalTarget(p string) bool {
	p = strings.TrimSpace(p)
	if p == "" {
		return false
	}
	for {
		trimmed := p
		for _, suffix := range []string{"/*", "/.*", "/.", "/"} {
			trimmed = strings.TrimSuffix(trimmed, suffix)
		}
		if trimmed == p {
			break
		}
		p = trimmed
	}
	switch p {
	case "", "~", "$HOME", "*", "~root":
		return true
	}
	if strings.HasPrefix(p, "/") {
		clean := path.Clean(p)
		if clean == "/" {
			return true
		}
		return slices.Contains(systemDirs, strings.TrimPrefix(clean, "/"))
	}
	return false
}

// diskDevice matches block devices holding filesystems.
var diskDevice = regexp.MustCompile(`^/dev/(sd[a-z]|nvme\d|vd[a-z]|xvd[a-z]|hd[a-z]|mmcblk\d|disk/|dm-\d|md\d|mapper/|root$)`)

// options splits argv[1:] into flags and operands ("--" ends flags).
func options(args []string) (flags, operands []string) {
	end := false
	for _, a := range args[1:] {
		switch {
		case end:
			operands = append(operands, a)
		case a == "--":
			end = true
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
		default:
			operands = append(operands, a)
		}
	}
	return flags, operands
}

// hasFlag reports a short flag letter (in any cluster such as -rf) or a
// long flag.
func hasFlag(flags []string, short string, long ...string) bool {
	for _, f := range flags {
		if strings.HasPrefix(f, "--") {
			name, _, _ := strings.Cut(f, "=")
			if slices.Contains(long, name) {
				return true
			}
			continue
		}
		if short != "" && strings.ContainsAny(f[1:], short) {
			return true
		}
	}
	return false
}

func anyCritical(operands []string) bool {
	return slices.ContainsFunc(operands, isCriticalTarget)
}

func anyDisk(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return diskDevice.MatchString(a) })
}

// forkBombText catches the classic fork bomb when it does not parse.
var forkBombText = regexp.MustCompile(`(\S+)\s*\(\)\s*\{\s*(\S+)\s*\|\s*(\S+)\s*&\s*\}`)

// hardline returns the first unrecoverable action in a, or nil. These never
// run, whatever the mode (Hermes UNRECOVERABLE_BLOCKLIST, "security.md").
func hardline(a *analysis) *finding {
	if a.forkBomb || forkBombText.MatchString(a.normalized) {
		return &finding{"fork bomb", "a fork bomb would exhaust the machine's processes"}
	}
	for _, t := range a.redirects {
		if diskDevice.MatchString(t) {
			return &finding{"overwrite disk device", "redirecting output onto disk device " + t + " destroys its filesystem"}
		}
	}
	for _, c := range a.commands {
		flags, operands := options(c.args)
		switch name := c.name(); {
		case name == "rm":
			recursive := hasFlag(flags, "rR", "--recursive")
			if recursive && (anyCritical(operands) || hasFlag(flags, "", "--no-preserve-root")) {
				return &finding{"delete root or home", "recursive rm of " + strings.Join(operands, " ") + " would wipe the system or the home directory"}
			}
		case name == "chmod" || name == "chown" || name == "chgrp":
			if hasFlag(flags, "R", "--recursive") && len(operands) > 1 && anyCritical(operands[1:]) {
				return &finding{"recursive permission change of root", name + " -R on " + strings.Join(operands[1:], " ") + " breaks the whole system"}
			}
		case name == "find":
			deletes := slices.Contains(c.args, "-delete") || execsRm(c.args)
			if deletes && len(operands) > 0 && isCriticalTarget(operands[0]) {
				return &finding{"delete root or home", "find " + operands[0] + " with -delete would wipe the system or the home directory"}
			}
		case strings.HasPrefix(name, "mkfs") || slices.Contains([]string{"mke2fs", "mkswap", "mkntfs", "mkdosfs", "wipefs", "blkdiscard"}, name):
			if slices.ContainsFunc(operands, func(o string) bool { return strings.HasPrefix(o, "/dev/") }) {
				return &finding{"format disk", name + " on a device destroys its filesystem"}
			}
		case name == "dd":
			for _, arg := range c.args[1:] {
				if target, ok := strings.CutPrefix(arg, "of="); ok && diskDevice.MatchString(target) {
					return &finding{"overwrite disk device", "dd onto disk device " + target + " destroys its filesystem"}
				}
			}
		case name == "shred" || name == "tee" || name == "cp":
			if anyDisk(operands) {
				return &finding{"overwrite disk device", name + " onto a disk device destroys its filesystem"}
			}
		}
	}
	return nil
}

// execsRm reports `find ... -exec rm` / `-execdir rm`.
func execsRm(args []string) bool {
	for i, a := range args[:len(args)-1] {
		if (a == "-exec" || a == "-execdir" || a == "-ok") && path.Base(args[i+1]) == "rm" {
			return true
		}
	}
	return false
}

// sensitivePaths returns the path prefixes whose writes need approval:
// /etc, ~/.ssh, HERMES_HOME/.env and HERMES_HOME/config.yaml (a write there
// could set approvals.mode: off), in the spellings a command may use.
func (s *Service) sensitivePaths() []string {
	var out []string
	out = append(out, "/etc/", "~/.ssh/", "$HOME/.ssh/")
	for _, hermesHome := range []string{"~/.hermes", "$HOME/.hermes", "$HERMES_HOME"} {
		out = append(out, hermesHome+"/.env", hermesHome+"/config.yaml")
	}
	if s.cfg.Home != "" {
		out = append(out, path.Join(s.cfg.Home, ".ssh")+"/", path.Join(s.cfg.Home, ".hermes", ".env"), path.Join(s.cfg.Home, ".hermes", "config.yaml"))
	}
	if s.cfg.HermesHome != "" {
		out = append(out, path.Join(s.cfg.HermesHome, ".env"), path.Join(s.cfg.HermesHome, "config.yaml"))
	}
	return out
}

func (s *Service) isSensitive(target string) bool {
	if target == "" {
		return false
	}
	t := target
	if strings.HasPrefix(t, "/") {
		t = path.Clean(t)
		if t == "/etc" {
			return true
		}
	}
	for _, p := range s.sensitivePaths() {
		if strings.HasPrefix(t, p) || t == strings.TrimSuffix(p, "/") {
			return true
		}
	}
	return false
}

var (
	sqlDrop     = regexp.MustCompile(`(?i)\bDROP\s+(TABLE|DATABASE|SCHEMA)\b`)
	sqlTruncate = regexp.MustCompile(`(?i)\bTRUNCATE\s+(TABLE\s+)?[\w."` + "`" + `]`)
	sqlDelete   = regexp.MustCompile(`(?i)\bDELETE\s+FROM\b`)
	sqlWhere    = regexp.MustCompile(`(?i)\bWHERE\b`)
	// remoteToShellText catches curl|sh when the command does not parse.
	remoteToShellText = regexp.MustCompile(`(?i)\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b`)
)

var worldWritableMode = regexp.MustCompile(`^[0-7]*[2367]$`)

// dangerous returns every approval-needing rule a matches (Hermes
// DANGEROUS_PATTERNS, "security.md").
func (s *Service) dangerous(a *analysis) []finding {
	var out []finding
	add := func(key, desc string) {
		if !slices.ContainsFunc(out, func(f finding) bool { return f.Key == key }) {
			out = append(out, finding{key, desc})
		}
	}
	if !a.parsed {
		add("unparseable command", "the command's quoting could not be parsed, so it could not be checked")
		if remoteToShellText.MatchString(a.normalized) {
			add("pipe remote script to shell", "downloads a script and runs it unseen")
		}
	}
	for _, t := range a.redirects {
		if s.isSensitive(t) {
			add("write to sensitive path", "writes into "+t)
		}
		if strings.HasPrefix(t, "/dev/") && !slices.Contains([]string{"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}, t) && !strings.HasPrefix(t, "/dev/fd/") {
			add("write to device", "writes to device "+t)
		}
	}
	for _, c := range a.commands {
		flags, operands := options(c.args)
		name := c.name()
		switch name {
		case "rm":
			if hasFlag(flags, "rR", "--recursive") {
				add("recursive delete", "recursive rm of "+strings.Join(operands, " "))
			}
		case "chmod":
			if len(operands) > 0 {
				mode := operands[0]
				if worldWritableMode.MatchString(mode) || strings.Contains(mode, "o+w") || strings.Contains(mode, "a+w") || strings.Contains(mode, "o=rw") || strings.Contains(mode, "a=rw") {
					add("world-writable permissions", "chmod "+mode+" makes files writable by every user")
				}
			}
			if hasFlag(flags, "R", "--recursive") && slices.ContainsFunc(operands[min(1, len(operands)):], s.isSensitive) {
				add("write to sensitive path", "recursive chmod in a sensitive directory")
			}
		case "chown", "chgrp":
			if hasFlag(flags, "R", "--recursive") {
				add("recursive chown", name+" -R "+strings.Join(operands, " "))
			}
		case "dd":
			if slices.ContainsFunc(c.args, func(x string) bool { return strings.HasPrefix(x, "if=") }) {
				add("disk copy", "dd copies raw data: "+strings.Join(c.args[1:], " "))
			}
		case "shred", "wipefs", "fdisk", "sfdisk", "parted", "sgdisk":
			add("destroy data", name+" destroys data or partitions")
		case "systemctl", "service":
			for _, verb := range []string{"stop", "disable", "mask", "restart", "kill"} {
				if slices.Contains(operands, verb) {
					add("stop system service", name+" "+strings.Join(operands, " "))
				}
			}
		case "kill":
			if len(c.args) > 2 && slices.Contains(c.args[2:], "-1") {
				add("kill all processes", "kill "+strings.Join(c.args[1:], " ")+" signals every process")
			}
		case "pkill", "killall":
			if slices.ContainsFunc(flags, func(f string) bool {
				return f == "-9" || f == "-KILL" || f == "-SIGKILL" || f == "--signal=9" || f == "--signal=KILL"
			}) || slices.Contains(c.args, "KILL") {
				add("force kill by name", name+" "+strings.Join(c.args[1:], " "))
			}
			if slices.ContainsFunc(operands, func(o string) bool { return strings.Contains(strings.ToLower(o), "hermes") }) {
				add("kill hermes", name+" would stop hermes itself")
			}
		case "xargs":
			if slices.ContainsFunc(c.args[1:], func(x string) bool { return path.Base(x) == "rm" || path.Base(x) == "shred" }) {
				add("xargs delete", "xargs feeds input to rm")
			}
		case "find":
			if slices.Contains(c.args, "-delete") || execsRm(c.args) {
				add("find delete", "find deletes what it matches")
			}
		case "git":
			if len(operands) > 0 && operands[0] == "push" && (hasFlag(flags, "f", "--force", "--force-if-includes") ||
				slices.ContainsFunc(operands[1:], func(o string) bool { return strings.HasPrefix(o, "+") })) {
				add("git force push", "force push rewrites remote history")
			}
		case "tee":
			if slices.ContainsFunc(operands, s.isSensitive) {
				add("write to sensitive path", "tee into "+strings.Join(operands, " "))
			}
		case "sed", "perl":
			if hasFlag(flags, "i", "--in-place") && slices.ContainsFunc(operands, s.isSensitive) {
				add("write to sensitive path", name+" -i edits "+strings.Join(operands, " "))
			}
		case "cp", "mv", "install", "ln", "rsync", "truncate":
			if len(operands) > 0 && s.isSensitive(operands[len(operands)-1]) {
				add("write to sensitive path", name+" into "+operands[len(operands)-1])
			}
		}
		if strings.HasPrefix(name, "mkfs") || name == "mke2fs" || name == "mkswap" {
			add("format filesystem", name+" formats a filesystem")
		}
		// bash <(curl ...), sh -c "$(curl ...)", source <(wget ...)
		if isInterpreter(name) && slices.ContainsFunc(c.subst, isDownloader) {
			add("pipe remote script to shell", "downloads a script and runs it unseen")
		}
	}
	for _, p := range a.pipes {
		if len(p.to) == 0 || !isInterpreter(p.to[0].name()) {
			continue
		}
		for _, from := range p.from {
			if isDownloader(from.name()) {
				add("pipe remote script to shell", from.name()+" output piped into "+p.to[0].name()+" runs a script unseen")
			}
			if from.name() == "base64" || from.name() == "xxd" || from.name() == "openssl" {
				add("decode and run", "decoded data piped into "+p.to[0].name()+" hides what runs")
			}
		}
	}
	if sqlDrop.MatchString(a.normalized) {
		add("sql drop", "DROP TABLE/DATABASE deletes data")
	}
	if sqlTruncate.MatchString(a.normalized) {
		add("sql truncate", "TRUNCATE deletes every row")
	}
	if deleteWithoutWhere(a.normalized) {
		add("sql delete without where", "DELETE FROM without WHERE deletes every row")
	}
	return out
}

func isDownloader(name string) bool {
	return name == "curl" || name == "wget" || name == "fetch"
}

// deleteWithoutWhere reports a DELETE FROM statement with no WHERE before
// the statement ends (at ';', a quote or the end of the command).
func deleteWithoutWhere(s string) bool {
	for _, loc := range sqlDelete.FindAllStringIndex(s, -1) {
		rest := s[loc[1]:]
		if end := strings.IndexAny(rest, ";\"'"); end >= 0 {
			rest = rest[:end]
		}
		if !sqlWhere.MatchString(rest) {
			return true
		}
	}
	return false
}
