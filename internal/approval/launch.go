package approval

import (
	"path"
	"slices"
	"strings"
)

// launcher describes a program that runs another program given on its
// command line (sudo, env, timeout, xargs, busybox, ...).
type launcher struct {
	// withValue are the options that take a separate value (sudo -u USER).
	withValue []string
	// skip is the number of operands before the command (timeout DURATION,
	// chroot DIR, flock FILE).
	skip int
	// script are options whose value is a shell script (su -c, env -S).
	script []string
	// joined: the remaining arguments are joined into a shell script (watch).
	joined bool
	// stdinArgs: more arguments, or the {} replacement, come from stdin (xargs).
	stdinArgs bool
	// lookup are options that make it look a command up instead of running it
	// (command -v).
	lookup []string
}

func opts(s string) []string { return strings.Fields(s) }

// launchers lists the programs unwrap sees through. The target they run is
// classified in their place.
var launchers = map[string]launcher{
	"sudo":             {withValue: opts("-u -g -h -p -C -D -r -t -U -T --user --group --host --prompt --chdir --close-from --role --type --other-user --command-timeout")},
	"doas":             {withValue: opts("-u -C")},
	"pkexec":           {withValue: opts("--user")},
	"env":              {withValue: opts("-u -C --unset --chdir"), script: opts("-S --split-string")},
	"nohup":            {},
	"setsid":           {},
	"time":             {withValue: opts("-f -o --format --output")},
	"builtin":          {},
	"unbuffer":         {},
	"fakeroot":         {},
	"eatmydata":        {},
	"catchsegv":        {},
	"rlwrap":           {},
	"torsocks":         {},
	"proxychains":      {withValue: opts("-f")},
	"proxychains4":     {withValue: opts("-f")},
	"dbus-run-session": {},
	"xvfb-run":         {withValue: opts("-n -s -f -e -p --server-num --server-args --auth-file --error-file")},
	"firejail":         {},
	"unshare":          {},
	"setpriv":          {},
	"numactl":          {},
	"prlimit":          {withValue: opts("-p --pid")},
	"cgexec":           {withValue: opts("-g")},
	"nsenter":          {withValue: opts("-t -S -G --target --setuid --setgid")},
	"systemd-run":      {withValue: opts("-p -u -E -M -H --unit --property --setenv --machine --host --description --slice --uid --gid --working-directory")},
	"strace":           {withValue: opts("-o -e -p -s -u -E -I -b -a -X -P -O -S")},
	"ltrace":           {withValue: opts("-o -e -p -s -u -n -a -l")},
	"valgrind":         {},
	"stdbuf":           {withValue: opts("-i -o -e")},
	"ionice":           {withValue: opts("-c -n -p --class --classdata --pid")},
	"nice":             {withValue: opts("-n --adjustment")},
	"timeout":          {withValue: opts("-s -k --signal --kill-after"), skip: 1},
	"chrt":             {skip: 1},
	"taskset":          {skip: 1},
	"chroot":           {withValue: opts("--userspec --groups"), skip: 1},
	"flock":            {withValue: opts("-w -E --timeout --conflict-exit-code"), skip: 1, script: opts("-c --command")},
	"su":               {withValue: opts("-s -g -G --shell --group --supp-group"), script: opts("-c --command --session-command")},
	"runuser":          {withValue: opts("-u -s -g -G --user --shell --group --supp-group"), script: opts("-c --command --session-command")},
	"script":           {withValue: opts("-E -T -I -O -B -t --echo --log-timing --log-in --log-out --log-io"), script: opts("-c --command")},
	"watch":            {withValue: opts("-n -d -q --interval --differences --equexit"), joined: true},
	"exec":             {withValue: opts("-a")},
	"command":          {lookup: opts("-v -V")},
	"busybox":          {},
	"toybox":           {},
	"xargs":            {withValue: opts("-I -n -P -L -s -d -E -e -a --arg-file --max-args --max-procs --delimiter --replace --max-lines --eof --max-chars --process-slot-var"), stdinArgs: true},
	"parallel":         {withValue: opts("-j -S -P --jobs --sshlogin --joblog --results"), joined: true},
}

// stdinMarker stands for text a launcher takes from stdin at run time
// (xargs arguments and its {} replacement); it renders as an unknown
// command substitution wherever it ends up.
const stdinMarker = "$(" + dynamicMark + "stdin)"

// unwrapped is the command a chain of launchers finally runs.
type unwrapped struct {
	args []string
	// scripts are shell scripts the launchers run (env -S, su -c, watch ...).
	scripts []string
	// via names the launchers seen through, outermost first.
	via []string
}

// unwrap sees through launchers: `sudo -u x env A=1 timeout 5 busybox rm
// -rf /` runs `rm -rf /`. Arguments xargs reads from stdin become
// stdinMarker. A chain that runs nothing (`env`, `command -v ls`, `exec
// >log`) yields no args.
func unwrap(args []string) unwrapped {
	var u unwrapped
	for depth := 0; len(args) > 0 && depth < 16; depth++ {
		name := path.Base(args[0])
		spec, ok := launchers[name]
		if !ok || strings.Contains(args[0], "$") {
			break
		}
		u.via = append(u.via, name)
		replace := ""
		if len(spec.script) > 0 {
			// su USER -c SCRIPT, flock FILE -c SCRIPT: the script option
			// may follow operands.
			for j := 1; j < len(args); j++ {
				opt, val, hasVal := strings.Cut(args[j], "=")
				if !strings.HasPrefix(opt, "--") {
					opt, hasVal = args[j], false
				}
				if slices.Contains(spec.script, opt) {
					if !hasVal && j+1 < len(args) {
						val, hasVal = args[j+1], true
					}
					if hasVal {
						u.scripts = append(u.scripts, val)
					}
				}
			}
		}
		i := 1
	options:
		for i < len(args) {
			arg := args[i]
			switch {
			case arg == "--":
				i++
				break options
			case name == "env" && !strings.HasPrefix(arg, "-") && strings.Contains(arg, "="):
				i++
				continue
			case !strings.HasPrefix(arg, "-") || arg == "-":
				break options
			}
			opt, val, hasVal := strings.Cut(arg, "=")
			if !strings.HasPrefix(opt, "--") {
				opt, val, hasVal = arg, "", false
			}
			switch {
			case slices.Contains(spec.lookup, opt):
				return unwrapped{via: u.via, scripts: u.scripts}
			case slices.Contains(spec.script, opt):
				if !hasVal {
					i++ // collected above
				}
			case name == "xargs" && (strings.HasPrefix(opt, "-I") || opt == "--replace"):
				if len(opt) > 2 && opt[1] == 'I' {
					val, hasVal = opt[2:], true
				}
				if !hasVal && i+1 < len(args) {
					val = args[i+1]
					i++
				}
				replace = val
			case name == "xargs" && strings.HasPrefix(opt, "-i"):
				replace = "{}"
			case slices.Contains(spec.withValue, opt) && !hasVal:
				i++
			}
			i++
		}
		i = min(i+spec.skip, len(args))
		args = args[i:]
		if spec.joined && len(args) > 0 {
			u.scripts = append(u.scripts, strings.Join(args, " "))
			args = nil
		}
		if spec.stdinArgs && len(args) > 0 {
			rest := make([]string, 0, len(args)+1)
			for _, a := range args {
				if replace != "" {
					a = strings.ReplaceAll(a, replace, stdinMarker)
				}
				rest = append(rest, a)
			}
			if replace == "" {
				rest = append(rest, stdinMarker)
			}
			args = rest
		}
	}
	u.args = args
	return u
}
