package initproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// SudoEntry is the name the hermes binary runs SudoMain by (wire.SudoPath).
const SudoEntry = "sudo"

// sudoSecurePath is the PATH commands get through sudo: Debian's and
// Ubuntu's secure_path, which E2B's templates (Debian based) use.
const sudoSecurePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// sudoKeptEnv are the variables sudo's env_reset keeps (sudoers(5)
// defaults on Debian), besides the ones it sets.
var sudoKeptEnv = []string{"TERM", "COLORTERM", "DISPLAY", "XAUTHORITY", "LANG", "LANGUAGE", "LC_ALL", "LS_COLORS", "TZ"}

// sudoRelayed are the signals the client passes on to the command, as
// sudo(8) relays them (the command is in a session of its own, so a
// terminal's ^C reaches the client only).
var sudoRelayed = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCONT}

// sudoUsage and sudoVersion are what -h and -V print.
const (
	sudoUsage   = "usage: sudo [-EHiknsVv] [-u root] [--preserve-env[=LIST]] [VAR=value] [command [arg ...]]"
	sudoVersion = "Sudo version 1.9 (hermes box: runs the command as the box's root)"
)

// sudoOptions is a parsed sudo command line.
type sudoOptions struct {
	preserveAll bool
	preserve    []string // --preserve-env=LIST
	login       bool     // -i
	shell       bool     // -s
	setHome     bool     // -H (always so without -E)
	noCommand   bool     // -v, -K: nothing to run
	invalidate  bool     // -k: nothing to run when no command follows
	assign      []string // VAR=value before the command
	argv        []string
}

// SudoMain is `sudo` inside a box with sudo (wire.InitSpec.SudoUIDs): it
// asks the box's init to run the command as root (sudo_linux.go has the
// design) and exits with the command's status. It takes sudo(8)'s common
// options: -u/-g root, -E and --preserve-env[=LIST], -n, -H, -i, -s,
// -k/-K/-v, -V, -h and --; there is no password, so -n never fails.
func SudoMain(args []string) int {
	o, code, done := parseSudoArgs(args, os.Stdout)
	if done {
		return code
	}
	if o.noCommand {
		return 0
	}
	req, err := o.request()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sudo:", err)
		return 1
	}
	return runSudo(req)
}

// parseSudoArgs parses args; done is set when nothing is to run (help,
// version, a usage error: code is the exit status).
func parseSudoArgs(args []string, out io.Writer) (o sudoOptions, code int, done bool) {
	usage := func(msg string) (sudoOptions, int, bool) {
		fmt.Fprintf(os.Stderr, "sudo: %s\n%s\n", msg, sudoUsage)
		return o, 1, true
	}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		if long, ok := strings.CutPrefix(a, "--"); ok {
			var msg string
			if msg, done = o.long(long, args, &i, out); msg != "" {
				return usage(msg)
			}
			if done {
				return o, 0, true
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			switch c := a[j]; c {
			case 'E':
				o.preserveAll = true
			case 'H':
				o.setHome = true
			case 'i':
				o.login = true
			case 's':
				o.shell = true
			case 'n', 'S', 'b', 'P':
			case 'k': // nothing to forget; alone it runs nothing
				o.invalidate = true
			case 'K', 'v':
				o.noCommand = true
			case 'V':
				fmt.Fprintln(out, sudoVersion)
				return o, 0, true
			case 'h':
				fmt.Fprintln(out, sudoUsage)
				return o, 0, true
			case 'u', 'g':
				value := a[j+1:]
				if value == "" {
					if i+1 >= len(args) {
						return usage(fmt.Sprintf("option -%c needs an argument", c))
					}
					i++
					value = args[i]
				}
				if !isRootName(value) {
					return usage(fmt.Sprintf("only root is available in this box (-%c %s)", c, value))
				}
				j = len(a)
			default:
				return usage(fmt.Sprintf("unknown option -%c", c))
			}
		}
	}
	for ; i < len(args) && strings.Contains(args[i], "=") && !strings.HasPrefix(args[i], "="); i++ {
		o.assign = append(o.assign, args[i])
	}
	o.argv = args[i:]
	o.noCommand = o.noCommand || o.invalidate && len(o.argv) == 0 && !o.login && !o.shell
	if len(o.argv) == 0 && !o.login && !o.shell && !o.noCommand {
		return usage("a command is required")
	}
	return o, 0, false
}

// long applies long option name[=value] (args[*i] is it; a separate value
// advances *i). It returns a usage error, or done for --help and --version.
func (o *sudoOptions) long(long string, args []string, i *int, out io.Writer) (msg string, done bool) {
	name, value, hasValue := strings.Cut(long, "=")
	switch name {
	case "preserve-env":
		if hasValue {
			o.preserve = append(o.preserve, strings.Split(value, ",")...)
		} else {
			o.preserveAll = true
		}
	case "login":
		o.login = true
	case "shell":
		o.shell = true
	case "non-interactive", "set-home", "reset-timestamp", "remove-timestamp", "validate":
		o.setHome = o.setHome || name == "set-home"
		o.noCommand = o.noCommand || name == "validate" || name == "remove-timestamp"
		o.invalidate = o.invalidate || name == "reset-timestamp"
	case "user", "group":
		if !hasValue {
			if *i+1 >= len(args) {
				return "option --" + name + " needs an argument", false
			}
			*i++
			value = args[*i]
		}
		if !isRootName(value) {
			return fmt.Sprintf("only root is available in this box (%s %q)", name, value), false
		}
	case "help":
		fmt.Fprintln(out, sudoUsage)
		return "", true
	case "version":
		fmt.Fprintln(out, sudoVersion)
		return "", true
	default:
		return "unknown option --" + long, false
	}
	return "", false
}

// isRootName reports whether a -u or -g value names root.
func isRootName(v string) bool { return v == "root" || v == "0" || v == "#0" }

// request builds what the init runs: the environment sudo's env_reset
// gives root, the shell for -i and -s, the working directory.
func (o sudoOptions) request() (sudoRequest, error) {
	home, shell := rootAccount()
	env := o.environment(home, shell)
	dir, err := os.Getwd()
	if err != nil {
		dir = "/"
	}
	argv := o.argv
	switch {
	case o.login:
		dir = home
		argv = shellArgv(shell, true, o.argv)
	case o.shell:
		if s := os.Getenv("SHELL"); s != "" {
			shell = s
		}
		argv = shellArgv(shell, false, o.argv)
	}
	return sudoRequest{Argv: argv, Env: env, Dir: dir}, nil
}

// shellArgv runs args in shell (a login shell for -i), or the shell
// itself when there are none; arguments are joined with spaces, their
// shell metacharacters escaped, as sudo(8) does for -i and -s.
func shellArgv(shell string, login bool, args []string) []string {
	argv := []string{shell}
	if login {
		argv = append(argv, "-l")
	}
	if len(args) == 0 {
		return argv
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		var b strings.Builder
		for _, r := range a {
			if !(r == '_' || r == '-' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		quoted[i] = b.String()
	}
	return append(argv, "-c", strings.Join(quoted, " "))
}

// environment is the command's environment: the caller's kept variables
// (all of them with -E, else sudoKeptEnv and --preserve-env's), then
// root's HOME, USER, LOGNAME, SHELL, MAIL, the secure PATH and SUDO_*.
func (o sudoOptions) environment(home, shell string) []string {
	keep := map[string]bool{}
	for _, k := range append(append([]string{}, sudoKeptEnv...), o.preserve...) {
		keep[k] = true
	}
	set := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := set[k]; !ok {
			order = append(order, k)
		}
		set[k] = v
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if o.preserveAll || keep[k] || strings.HasPrefix(k, "LC_") {
			put(k, v)
		}
	}
	user := strconv.Itoa(os.Getuid())
	if name := os.Getenv("USER"); name != "" {
		user = name
	}
	if _, kept := set["HOME"]; !kept || !o.preserveAll || o.setHome || o.login {
		put("HOME", home)
	}
	for k, v := range map[string]string{"USER": "root", "LOGNAME": "root", "SHELL": shell, "MAIL": "/var/mail/root",
		"PATH": sudoSecurePath, "SUDO_USER": user, "SUDO_UID": strconv.Itoa(os.Getuid()), "SUDO_GID": strconv.Itoa(os.Getgid()),
		"SUDO_COMMAND": strings.Join(o.argv, " ")} {
		if k == "SHELL" && o.preserveAll && set["SHELL"] != "" && !o.login {
			continue
		}
		put(k, v)
	}
	for _, kv := range o.assign {
		k, v, _ := strings.Cut(kv, "=")
		put(k, v)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+set[k])
	}
	return env
}

// rootAccount returns root's home and shell from the box's /etc/passwd
// (/root and /bin/sh when it has no entry).
func rootAccount() (home, shell string) {
	home, shell = "/root", "/bin/sh"
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return home, shell
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 4<<20))
	for sc.Scan() {
		// name:password:UID:GID:gecos:home:shell
		if fs := strings.Split(sc.Text(), ":"); len(fs) >= 7 && fs[2] == "0" {
			if fs[5] != "" {
				home = fs[5]
			}
			if fs[6] != "" {
				shell = fs[6]
			}
			break
		}
	}
	return home, shell
}

// runSudo sends req to the init with this process's standard descriptors,
// relays signals until the answer comes, and returns the exit status.
func runSudo(req sudoRequest) int {
	c, err := dialSudo()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sudo:", err)
		return 1
	}
	defer c.Close()
	body, err := json.Marshal(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sudo:", err)
		return 1
	}
	if len(body) > maxSudoRequest {
		fmt.Fprintln(os.Stderr, "sudo: argument list too long")
		return 1
	}
	fds := standardFDs()
	if _, _, err := c.WriteMsgUnix(body, unix.UnixRights(fds[:]...), nil); err != nil {
		fmt.Fprintln(os.Stderr, "sudo: send the request to the box's init:", err)
		return 1
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, sudoRelayed...)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			b, _ := json.Marshal(sudoSignal{Signal: int(s.(unix.Signal))})
			c.Write(b)
		}
	}()
	buf := make([]byte, 64<<10)
	n, err := c.Read(buf)
	var r sudoReply
	if err != nil || json.Unmarshal(buf[:n], &r) != nil {
		fmt.Fprintln(os.Stderr, "sudo: the box's init gave no answer")
		return 1
	}
	if r.Err != "" {
		fmt.Fprintln(os.Stderr, "sudo:", r.Err)
	}
	return r.Code
}

// dialSudo connects to the init's sudo socket and checks that the
// listener is the box's init (PID 1, root), not a box process that took
// the name.
func dialSudo() (*net.UnixConn, error) {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: wire.SudoSocket, Net: "unixpacket"})
	if err != nil {
		return nil, errors.New("this box has no sudo (only sandboxes of `hermes sandbox serve` do): run the command as root instead (E2B SDK: user \"root\")")
	}
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	rc.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil || cred.Pid != 1 || cred.Uid != 0 {
		c.Close()
		return nil, errors.New("the sudo socket is not served by the box's init")
	}
	return c, nil
}

// standardFDs returns descriptors 0, 1 and 2, with /dev/null for any that
// is not open.
func standardFDs() [3]int {
	fds := [3]int{0, 1, 2}
	for i := range fds {
		if _, err := unix.FcntlInt(uintptr(i), unix.F_GETFD, 0); err != nil {
			if null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
				fds[i] = null
			}
		}
	}
	return fds
}
