package approval

import (
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"path"
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

// diskDevice matches block devices holding filesystems.
var diskDevice = lazyregexp.New(`^/dev/(sd[a-z]|nvme\d|vd[a-z]|xvd[a-z]|hd[a-z]|mmcblk\d|disk/|dm-\d|md\d|mapper/|root$)`)

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

func (a *analysis) anyCritical(operands []string, dir dirState) bool {
	return slices.ContainsFunc(operands, func(o string) bool { return a.paths.isCritical(o, dir) })
}

// anyDisk reports an argument that resolves to a disk device.
func (a *analysis) anyDisk(args []string, dir dirState) bool {
	return slices.ContainsFunc(args, func(arg string) bool { return a.isDiskPath(arg, dir) })
}

func (a *analysis) isDiskPath(p string, dir dirState) bool {
	cands, _ := a.paths.resolve(p, dir)
	return slices.ContainsFunc(cands, isDisk)
}

// forkBombText catches the classic fork bomb when it does not parse.
var forkBombText = lazyregexp.New(`(\S+)\s*\(\)\s*\{\s*(\S+)\s*\|\s*(\S+)\s*&\s*\}`)

// hardline returns the first unrecoverable action in a, or nil. These never
// run, whatever the mode (Hermes UNRECOVERABLE_BLOCKLIST, "security.md").
func hardline(a *analysis) *finding {
	if a.forkBomb || strings.Contains(a.normalized, "(") && forkBombText().MatchString(a.normalized) {
		return &finding{"fork bomb", "a fork bomb would exhaust the machine's processes"}
	}
	if len(a.blocks) > 0 {
		return &a.blocks[0]
	}
	for _, t := range a.redirects {
		if a.isDiskPath(t.path, t.dir) {
			return &finding{"overwrite disk device", "redirecting output onto disk device " + t.path + " destroys its filesystem"}
		}
	}
	for _, c := range a.commands {
		if f := a.hardlineCommand(c); f != nil {
			return f
		}
	}
	return nil
}

func (a *analysis) hardlineCommand(c simpleCommand) *finding {
	flags, operands := options(c.args)
	switch name := c.name(); {
	case name == "rm":
		recursive := hasFlag(flags, "rR", "--recursive")
		if recursive && (a.anyCritical(operands, c.dir) || hasFlag(flags, "", "--no-preserve-root")) {
			return &finding{"delete root or home", "recursive rm of " + strings.Join(operands, " ") + " would wipe the system or the home directory"}
		}
	case name == "mv":
		if a.anyCritical(operands[:max(0, len(operands)-1)], c.dir) || len(optionValues(c.args, "t", "--target-directory")) > 0 && a.anyCritical(operands, c.dir) {
			return &finding{"move root or home", "mv of " + strings.Join(operands, " ") + " would move a system directory or the home directory away"}
		}
	case name == "chmod" || name == "chown" || name == "chgrp":
		if hasFlag(flags, "R", "--recursive") && len(operands) > 1 && a.anyCritical(operands[1:], c.dir) {
			return &finding{"recursive permission change of root", name + " -R on " + strings.Join(operands[1:], " ") + " breaks the whole system"}
		}
	case name == "find":
		deletes := slices.Contains(c.args, "-delete") || execsRm(c.args)
		if deletes && len(operands) > 0 && a.paths.isCritical(operands[0], c.dir) {
			return &finding{"delete root or home", "find " + operands[0] + " with -delete would wipe the system or the home directory"}
		}
	case strings.HasPrefix(name, "mkfs") || slices.Contains([]string{"mke2fs", "mkswap", "mkntfs", "mkdosfs", "wipefs", "blkdiscard"}, name):
		if slices.ContainsFunc(operands, func(o string) bool {
			cands, _ := a.paths.resolve(o, c.dir)
			return slices.ContainsFunc(cands, func(p string) bool { return strings.HasPrefix(p, "/dev/") })
		}) {
			return &finding{"format disk", name + " on a device destroys its filesystem"}
		}
	case name == "dd":
		for _, arg := range c.args[1:] {
			if target, ok := strings.CutPrefix(arg, "of="); ok && a.isDiskPath(target, c.dir) {
				return &finding{"overwrite disk device", "dd onto disk device " + target + " destroys its filesystem"}
			}
		}
	case name == "shred" || name == "tee" || name == "cp" || name == "truncate" || name == "install":
		if a.anyDisk(operands, c.dir) {
			return &finding{"overwrite disk device", name + " onto a disk device destroys its filesystem"}
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

// writeFindings checks one written path: a path computed at run time, a
// sensitive place (/etc, ~/.ssh, HERMES_HOME, shell startup files...) or a
// device.
func (a *analysis) writeFindings(p string, dir dirState, how string, add func(key, desc string)) {
	if p == cwdFile {
		if !dir.known {
			add("write to computed path", how+" writes into a directory computed at run time")
		}
		for _, d := range dir.dirs {
			if d != "" && a.paths.isSensitive(d) {
				add("write to sensitive path", how+" writes into "+d)
			} else if s := a.paths.holdsSensitive(d); d != "" && s != "" {
				add("write to sensitive path", how+" writes into "+d+", which holds "+s)
			}
		}
		return
	}
	cands, known := a.paths.resolve(p, dir)
	if !known {
		add("write to computed path", how+" writes to "+clip(p)+", a path computed at run time (or relative to one)")
		return
	}
	a.protectedFindings(cands, how, add)
	for _, c := range cands {
		if a.paths.isSensitive(c) {
			add("write to sensitive path", how+" writes into "+c)
		} else if s := a.paths.holdsSensitive(c); s != "" {
			add("write to sensitive path", how+" writes into "+c+", which holds "+s)
		}
		if strings.HasPrefix(c, "/dev/") && !harmlessDevice(c) {
			add("write to device", how+" writes to device "+c)
		}
	}
}

var (
	sqlDrop     = lazyregexp.New(`(?i)\bDROP\s+(TABLE|DATABASE|SCHEMA)\b`)
	sqlTruncate = lazyregexp.New(`(?i)\bTRUNCATE\s+(TABLE\s+)?[\w."` + "`" + `]`)
	sqlDelete   = lazyregexp.New(`(?i)\bDELETE\s+FROM\b`)
	sqlWhere    = lazyregexp.New(`(?i)\bWHERE\b`)
	// remoteToShellText catches curl|sh when the command does not parse.
	remoteToShellText = lazyregexp.New(`(?i)\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b`)
)

var worldWritableMode = lazyregexp.New(`^[0-7]*[2367]$`)

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
		if remoteToShellText().MatchString(a.normalized) {
			add("pipe remote script to shell", "downloads a script and runs it unseen")
		}
	}
	for _, f := range a.asks {
		add(f.Key, f.Description)
	}
	for _, t := range a.redirects {
		a.writeFindings(t.path, t.dir, "a redirection", add)
	}
	if f := a.runsWrittenFile(); f != nil {
		add(f.Key, f.Description)
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
				if key, desc := chmodRisk(operands[0]); key != "" {
					add(key, "chmod "+operands[0]+" "+desc)
				}
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
		case "find":
			if slices.Contains(c.args, "-delete") || execsRm(c.args) {
				add("find delete", "find deletes what it matches")
			}
		case "ln":
			// a link to a sensitive place turns later writes through it
			// (ln -s ~/.hermes h; echo x >> h/config.yaml) into unchecked ones
			sources := operands
			if len(optionValues(c.args, "t", "--target-directory")) == 0 && len(operands) > 1 {
				sources = operands[:len(operands)-1]
			}
			for _, src := range sources {
				cands, known := a.paths.resolve(src, c.dir)
				if !known || slices.ContainsFunc(cands, func(p string) bool { return a.paths.isSensitive(p) || a.paths.holdsSensitive(p) != "" }) {
					add("link to sensitive path", "ln makes a link to "+clip(src)+", through which later commands could write it unchecked")
				}
			}
		case "git":
			if subcommand(c.args) == "push" && (hasFlag(flags, "f", "--force", "--force-if-includes") ||
				slices.ContainsFunc(operands[1:], func(o string) bool { return strings.HasPrefix(o, "+") })) {
				add("git force push", "force push rewrites remote history")
			}
		}
		if slices.Contains(c.via, "xargs") && (name == "rm" || name == "shred" || name == "unlink") {
			add("xargs delete", "xargs feeds input to "+name)
		}
		for _, t := range writeTargets(c.args) {
			a.writeFindings(t, c.dir, name, add)
		}
		a.linkFindings(c, add)
		a.containerFindings(c, add)
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
			if isDecoder(from.name()) {
				add("decode and run", "decoded data piped into "+p.to[0].name()+" hides what runs")
			}
		}
	}
	if sqlDrop().MatchString(a.normalized) {
		add("sql drop", "DROP TABLE/DATABASE deletes data")
	}
	if sqlTruncate().MatchString(a.normalized) {
		add("sql truncate", "TRUNCATE deletes every row")
	}
	if deleteWithoutWhere(a.normalized) {
		add("sql delete without where", "DELETE FROM without WHERE deletes every row")
	}
	return out
}

func isDecoder(name string) bool {
	return name == "base64" || name == "base32" || name == "xxd" || name == "openssl" || name == "gpg" || name == "gunzip" || name == "zcat" || name == "uudecode"
}

func isDownloader(name string) bool {
	return name == "curl" || name == "wget" || name == "fetch"
}

// deleteWithoutWhere reports a DELETE FROM statement with no WHERE before
// the statement ends (at ';', a quote or the end of the command).
func deleteWithoutWhere(s string) bool {
	for _, loc := range sqlDelete().FindAllStringIndex(s, -1) {
		rest := s[loc[1]:]
		if end := strings.IndexAny(rest, ";\"'"); end >= 0 {
			rest = rest[:end]
		}
		if !sqlWhere().MatchString(rest) {
			return true
		}
	}
	return false
}

// chmodRisk classifies a chmod mode: world-writable (0777, o+w, a+rwx,
// +w with no "who", a=rw) or setuid/setgid (u+s, g+s, +s, 4755).
func chmodRisk(mode string) (key, desc string) {
	if worldWritableMode().MatchString(mode) {
		return "world-writable permissions", "makes files writable by every user"
	}
	if len(mode) == 4 && strings.Trim(mode, "01234567") == "" && (mode[0]-'0')&6 != 0 {
		return "setuid permissions", "sets the setuid or setgid bit"
	}
	for _, clause := range strings.Split(mode, ",") {
		i := 0
		for i < len(clause) && strings.IndexByte("ugoa", clause[i]) >= 0 {
			i++
		}
		who, rest := clause[:i], clause[i:]
		if rest == "" || (rest[0] != '+' && rest[0] != '=') {
			continue
		}
		perms := rest[1:]
		if strings.Contains(perms, "s") {
			return "setuid permissions", "sets the setuid or setgid bit"
		}
		if strings.Contains(perms, "w") && (who == "" || strings.ContainsAny(who, "oa")) {
			return "world-writable permissions", "makes files writable by every user"
		}
	}
	return "", ""
}
