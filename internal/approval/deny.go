package approval

import (
	"path"
	"slices"
	"strings"
)

// globalOptions lists, per program, the options before the subcommand that
// take a separate value (git -C DIR, docker -H HOST, kubectl -n NS).
var globalOptions = map[string][]string{
	"git":       opts("-C -c --git-dir --work-tree --namespace --exec-path --config-env --super-prefix --list-cmds"),
	"docker":    opts("-H -c -l --host --context --config --log-level --tlscacert --tlscert --tlskey"),
	"podman":    opts("-c --connection --url --root --runroot --log-level --storage-driver"),
	"kubectl":   opts("-n -s --namespace --context --kubeconfig --cluster --user --server --token --as"),
	"helm":      opts("-n --namespace --kube-context --kubeconfig --registry-config"),
	"npm":       opts("-w --prefix --workspace --userconfig --registry"),
	"pnpm":      opts("-C -w --dir --filter --workspace-dir"),
	"yarn":      opts("--cwd"),
	"cargo":     opts("-C -Z --config --color"),
	"go":        opts("-C"),
	"systemctl": opts("-H -M --host --machine"),
	"gh":        opts("-R --repo"),
	"make":      opts("-C -f -j -I -o -W --directory --file --makefile --jobs"),
	"terraform": {},
	"aws":       opts("--profile --region --endpoint-url --output"),
	"gcloud":    opts("--project --account --configuration"),
}

// denyForms returns the spellings of a command that approvals.deny globs
// are matched against: argv as parsed, argv with the program's base name
// (/usr/bin/git → git), and the program followed by its subcommand with
// the global options before it skipped (git -C . push → git push).
func denyForms(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	base := path.Base(args[0])
	out := []string{strings.Join(args, " ")}
	if base != args[0] {
		out = append(out, strings.Join(append([]string{base}, args[1:]...), " "))
	}
	withValue := globalOptions[base]
	i := 1
	for i < len(args) {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		if strings.HasPrefix(base, "terraform") && strings.HasPrefix(a, "-chdir") {
			i++
			continue
		}
		if slices.Contains(withValue, a) {
			i++
		}
		i++
	}
	if i > 1 && i <= len(args) {
		out = append(out, strings.Join(append([]string{base}, args[i:]...), " "))
	}
	// git -c alias.p=push p runs git push
	if base == "git" && i < len(args) {
		for _, kv := range optionValues(args[:i], "c", "") {
			if name, val, ok := strings.Cut(kv, "="); ok && strings.EqualFold(name, "alias."+args[i]) {
				out = append(out, strings.Join(append([]string{"git", val}, args[i+1:]...), " "))
			}
		}
	}
	return out
}

// subcommand returns the first operand after the global options ("push"
// for git -C . push), or "".
func subcommand(args []string) string {
	forms := denyForms(args)
	f := strings.Fields(forms[len(forms)-1])
	if len(f) > 1 {
		return f[1]
	}
	return ""
}
