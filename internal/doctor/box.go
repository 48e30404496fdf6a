package doctor

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/box/cgroup"
	"github.com/hermes-go/hermes/internal/box/wire"
)

// boxControllers are the cgroup controllers box limits need (internal/box
// newCgroupV2 / newCgroupV1).
var boxControllers = []string{"memory", "pids", "cpu"}

// Free space thresholds for HERMES_HOME/boxes (layers, images, snapshots).
const (
	diskFailBytes = 1 << 30 // 1 GiB: a layer or image build will not fit
	diskWarnBytes = 5 << 30
)

// checkBox checks what terminal.backend: box needs from the kernel and the
// host. Every result is Skip for another backend.
func checkBox(_ context.Context, e *Env) []Result {
	if e.Config == nil || e.Config.Config.Terminal.Backend != "box" {
		return []Result{{Status: Skip, Name: "box", Detail: "terminal.backend is not box; kernel checks skipped"}}
	}
	return []Result{
		checkNamespaces(e), checkUserNS(e), checkOverlay(e), checkCgroups(e),
		checkSeccomp(e), checkLandlock(e), checkBoxDisk(e), checkEgressCA(e), checkInitBinary(e),
	}
}

// checkInitBinary: boxes start faster and smaller with hermes-box-init
// beside hermes (box.FindInitBinary); without it hermes runs as the init
// itself, which works the same.
func checkInitBinary(e *Env) Result {
	const name = "box init"
	if e.Executable == "" {
		return Result{Status: Skip, Name: name, Detail: "the hermes binary's path is unknown"}
	}
	path, err := box.FindInitBinary(e.Executable)
	if err != nil {
		return Result{Status: Warn, Name: name,
			Detail: err.Error() + "; boxes use hermes itself as their init (slower start, more memory per box)",
			Fix:    "install both binaries: make install, or go build -o DIR/ ./cmd/hermes ./cmd/hermes-box-init"}
	}
	if speaks := initProtocol(path); speaks != strconv.Itoa(wire.Version) {
		return Result{Status: Fail, Name: name,
			Detail: fmt.Sprintf("%s is of another hermes build (frame protocol %s; this hermes speaks %d): every box fails to start", path, speaks, wire.Version),
			Fix:    "install hermes and hermes-box-init from the same build: make install, ./install.sh, or go build -o DIR/ ./cmd/hermes ./cmd/hermes-box-init"}
	}
	return Result{Status: OK, Name: name, Detail: path}
}

// initProtocol asks the box init at path which frame protocol it speaks
// (hermes-box-init protocol, wire.ProtocolArg), within 5 s: its answer,
// or "1 or older" from an init that does not know the question.
func initProtocol(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, wire.ProtocolArg).Output()
	if err != nil {
		return "1 or older"
	}
	if v := strings.TrimSpace(string(out)); len(v) <= 8 {
		return v
	}
	return "unknown"
}

func checkNamespaces(e *Env) Result {
	var missing []string
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup"} {
		if _, err := os.Lstat(filepath.Join(e.procRoot(), "self", "ns", ns)); err != nil {
			missing = append(missing, ns)
		}
	}
	if len(missing) > 0 {
		return Result{Status: Fail, Name: "namespaces", Detail: "the kernel lacks " + strings.Join(missing, ", ") + " namespaces",
			Fix: "use a kernel built with CONFIG_NAMESPACES and the missing CONFIG_*_NS, or terminal.backend: local"}
	}
	return Result{Status: OK, Name: "namespaces", Detail: "mnt, pid, net, ipc, uts, cgroup"}
}

// checkUserNS: root needs nothing; others need unprivileged user namespaces.
func checkUserNS(e *Env) Result {
	euid := os.Geteuid
	if e.Geteuid != nil {
		euid = e.Geteuid
	}
	if euid() == 0 {
		return Result{Status: OK, Name: "privileges", Detail: "running as root"}
	}
	fix := "sysctl -w kernel.unprivileged_userns_clone=1 user.max_user_namespaces=15000 (or run hermes as root)"
	if b, err := os.ReadFile(filepath.Join(e.procRoot(), "sys", "kernel", "unprivileged_userns_clone")); err == nil && strings.TrimSpace(string(b)) == "0" {
		return Result{Status: Fail, Name: "privileges", Detail: "not root and kernel.unprivileged_userns_clone is 0", Fix: fix}
	}
	if b, err := os.ReadFile(filepath.Join(e.procRoot(), "sys", "user", "max_user_namespaces")); err == nil && strings.TrimSpace(string(b)) == "0" {
		return Result{Status: Fail, Name: "privileges", Detail: "not root and user.max_user_namespaces is 0", Fix: fix}
	}
	if _, err := os.Lstat(filepath.Join(e.procRoot(), "self", "ns", "user")); err != nil {
		return Result{Status: Fail, Name: "privileges", Detail: "not root and the kernel has no user namespaces", Fix: fix}
	}
	return Result{Status: OK, Name: "privileges", Detail: "not root; unprivileged user namespaces are enabled"}
}

func checkOverlay(e *Env) Result {
	b, err := os.ReadFile(filepath.Join(e.procRoot(), "filesystems"))
	if err == nil && strings.Contains(string(b), "\toverlay\n") {
		return Result{Status: OK, Name: "overlayfs", Detail: "available"}
	}
	return Result{Status: Warn, Name: "overlayfs", Detail: "overlay is not in /proc/filesystems (the module may load on first use)",
		Fix: "modprobe overlay (add it to /etc/modules-load.d to keep it)"}
}

// checkCgroups: on cgroup v2 (CgroupRoot/cgroup.controllers) the box
// controllers must be available at the root; on v1 each must be mounted
// below it.
func checkCgroups(e *Env) Result {
	root := e.cgroupRoot()
	var missing []string
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err == nil {
		have := strings.Fields(string(b))
		for _, c := range boxControllers {
			if !slices.Contains(have, c) {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			return Result{Status: Fail, Name: "cgroup controllers",
				Detail: fmt.Sprintf("cgroup v2 at %s lacks %s (cgroup.controllers: %s)", root, strings.Join(missing, ", "), strings.TrimSpace(string(b))),
				Fix: fmt.Sprintf("enable them in the parent's cgroup.subtree_control (echo +%s > <parent>/cgroup.subtree_control), boot with cgroup_enable=%s, or run hermes in a cgroup delegated with memory, pids and cpu",
					missing[0], missing[0])}
		}
		if r, failed := probeBoxCgroup(e); failed {
			return r
		}
		return Result{Status: OK, Name: "cgroup controllers", Detail: "cgroup v2 at " + root + ": memory, pids, cpu"}
	}
	if _, err := os.Stat(root); err != nil {
		return Result{Status: Fail, Name: "cgroup controllers", Detail: "no cgroup filesystem at " + root,
			Fix: "mount cgroup2 at " + root + " (mount -t cgroup2 none " + root + ")"}
	}
	for _, c := range boxControllers {
		if _, err := os.Stat(filepath.Join(root, c)); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return Result{Status: Fail, Name: "cgroup controllers", Detail: "cgroup v1 at " + root + " lacks " + strings.Join(missing, ", "),
			Fix: "mount the v1 controllers under " + root + " or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1)"}
	}
	if r, failed := probeBoxCgroup(e); failed {
		return r
	}
	return Result{Status: OK, Name: "cgroup controllers", Detail: "cgroup v1 at " + root + ": memory, pids, cpu"}
}

// probeBoxCgroup creates and removes a box cgroup as this user
// (Env.CgroupProbe, else box.ProbeCgroup on the real /sys/fs/cgroup):
// the controllers being there does not mean this user may use them (a
// non-root user on cgroup v1, or on v2 outside a delegated subtree).
func probeBoxCgroup(e *Env) (Result, bool) {
	probe := e.CgroupProbe
	if probe == nil {
		if e.CgroupRoot != "" {
			return Result{}, false // a fake root: nothing real to try
		}
		probe = box.ProbeCgroup
	}
	if err := probe(); err != nil {
		r := Result{Status: Fail, Name: "cgroup controllers", Detail: "boxes cannot create their cgroup: " + err.Error(),
			Fix: "run hermes as root; on cgroup v2 a delegated subtree also works (systemd-run --user --scope -p Delegate=yes hermes …); on cgroup v1 only root can"}
		if pe := (*cgroup.PrivilegeError)(nil); errors.As(err, &pe) {
			r.Detail, r.Fix = "boxes cannot create their cgroup: "+pe.Err.Error(), pe.Fix
		}
		return r, true
	}
	return Result{}, false
}

func checkSeccomp(e *Env) Result {
	b, err := os.ReadFile(filepath.Join(e.procRoot(), "self", "status"))
	if err == nil && strings.Contains(string(b), "\nSeccomp:") {
		return Result{Status: OK, Name: "seccomp", Detail: "available"}
	}
	return Result{Status: Fail, Name: "seccomp", Detail: "the kernel has no seccomp filter support",
		Fix: "use a kernel built with CONFIG_SECCOMP_FILTER, or terminal.backend: local"}
}

// landlockABI asks landlock_create_ruleset(NULL, 0, VERSION) for the ABI.
func landlockABI() (int, error) {
	const createRulesetVersion = 1 << 0
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}

func checkLandlock(e *Env) Result {
	probe := landlockABI
	if e.LandlockABI != nil {
		probe = e.LandlockABI
	}
	abi, err := probe()
	if err != nil || abi <= 0 {
		detail := "Landlock is not available"
		if err != nil {
			detail += " (" + err.Error() + ")"
		}
		return Result{Status: Warn, Name: "Landlock", Detail: detail + "; boxes run without its file-access restriction",
			Fix: "boot a kernel ≥ 5.13 with landlock in lsm= (e.g. lsm=landlock,lockdown,yama,apparmor,bpf)"}
	}
	detail := fmt.Sprintf("ABI %d", abi)
	if abi < 7 {
		detail += " (hermes asks for 7; older ABIs apply best effort)"
	}
	return Result{Status: OK, Name: "Landlock", Detail: detail}
}

// checkBoxDisk: free space where layers, images and snapshots live.
func checkBoxDisk(e *Env) Result {
	dir := filepath.Join(e.Home, "boxes")
	for {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Result{Status: Warn, Name: "box disk", Detail: dir + ": " + err.Error(), Fix: "make HERMES_HOME reachable"}
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	detail := fmt.Sprintf("%.1f GiB free at %s", float64(free)/(1<<30), dir)
	switch {
	case free < diskFailBytes:
		return Result{Status: Fail, Name: "box disk", Detail: detail, Fix: "free space (hermes box rm TASK, hermes box snapshot rm) or move HERMES_HOME"}
	case free < diskWarnBytes:
		return Result{Status: Warn, Name: "box disk", Detail: detail, Fix: "free space (hermes box ls shows layer sizes)"}
	}
	return Result{Status: OK, Name: "box disk", Detail: detail}
}

// checkEgressCA: each box gets an ephemeral CA at start; what can be
// missing is the private upstream CA of terminal.box_network.ca_file and
// the host's system roots used to verify intercepted upstreams.
func checkEgressCA(e *Env) Result {
	caFile := e.Config.Config.Terminal.BoxNetwork.CAFile
	if caFile == "" {
		if _, err := x509.SystemCertPool(); err != nil {
			return Result{Status: Warn, Name: "egress CA", Detail: "no system CA roots: " + err.Error(),
				Fix: "apt-get install ca-certificates"}
		}
		return Result{Status: OK, Name: "egress CA", Detail: "per-box CA generated at box start; system roots verify upstreams"}
	}
	if !filepath.IsAbs(caFile) {
		caFile = filepath.Join(e.Home, caFile)
	}
	b, err := os.ReadFile(caFile)
	fix := "point terminal.box_network.ca_file at a PEM bundle (hermes config set terminal.box_network.ca_file PATH)"
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Result{Status: Fail, Name: "egress CA", Detail: "terminal.box_network.ca_file " + caFile + " does not exist", Fix: fix}
		}
		return Result{Status: Fail, Name: "egress CA", Detail: err.Error(), Fix: fix}
	}
	n := 0
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if _, err := x509.ParseCertificate(blk.Bytes); blk.Type == "CERTIFICATE" && err == nil {
			n++
		}
	}
	if n == 0 {
		return Result{Status: Fail, Name: "egress CA", Detail: caFile + " holds no PEM certificate", Fix: fix}
	}
	return Result{Status: OK, Name: "egress CA", Detail: fmt.Sprintf("%s: %d certificate(s)", caFile, n)}
}
