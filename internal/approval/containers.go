package approval

import (
	"slices"
	"strings"
)

// containerEngines run containers through a daemon (or, for podman, a
// helper) that the local guard does not confine: a host directory bound
// into a container is written with the engine's rights, not the command's.
var containerEngines = map[string]bool{"docker": true, "podman": true, "nerdctl": true}

// hostAccessFlags give a container the host itself.
var hostAccessFlags = []string{"--privileged", "--pid=host", "--ipc=host", "--userns=host", "--uts=host", "--cap-add",
	"--device", "--security-opt", "--volumes-from"}

// containerFindings checks docker/podman run and create: every host path
// bound in (-v SRC:DST, --volume, --mount source=SRC) is a write target
// (docker run -v /:/h alpine rm -rf /h/home), and options that hand the
// container the host need approval.
func (a *analysis) containerFindings(c simpleCommand, add func(key, desc string)) {
	name := c.name()
	if !containerEngines[name] {
		return
	}
	if sub := subcommand(c.args); sub != "run" && sub != "create" {
		return
	}
	for _, f := range c.args[1:] {
		flag, _, _ := strings.Cut(f, "=")
		if slices.Contains(hostAccessFlags, f) || slices.Contains(hostAccessFlags, flag) {
			add("container host access", name+" "+f+" gives the container access to the host")
		}
	}
	for _, v := range optionValues(c.args, "v", "--volume") {
		src, _, _ := strings.Cut(v, ":")
		if rest, ok := strings.CutPrefix(src, "$PWD"); ok { // the command's directory
			src = "." + rest
		}
		if strings.HasPrefix(src, "/") || strings.HasPrefix(src, "~") || strings.HasPrefix(src, ".") || strings.HasPrefix(src, "$") {
			a.writeFindings(src, c.dir, name+" bind mount", add)
		}
	}
	for _, m := range optionValues(c.args, "", "--mount") {
		for _, kv := range strings.Split(m, ",") {
			k, val, _ := strings.Cut(kv, "=")
			if k == "source" || k == "src" {
				a.writeFindings(val, c.dir, name+" bind mount", add)
			}
		}
	}
}
