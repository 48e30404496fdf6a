package approval

import (
	"path"
	"slices"
	"strings"

	"github.com/hermes-go/hermes/internal/lazyregexp"
)

// Protected paths and links (issue 23). Files such as .git/config and
// .git/hooks/* make the host run code later (the user's next `git status`),
// so a command that writes them, by redirection, tee, cp, mv, install,
// sed -i or git config --file, needs approval (terminal.protected_paths;
// under the local backend the kernel also keeps them read-only when hermes
// can make a mount namespace). A link whose target lies outside the
// workspace lets a later reader of the workspace (hermes building its
// prompt, an editor) read a file the command could not show: ln in every
// form, cp -s/-l and interpreters calling symlink need approval too.

// protectedEntry returns the terminal.protected_paths entry cleaned path c
// (absolute, or relative to an unknown workspace) falls under: the path
// relative to the workspace when c lies in it, else any trailing part of
// c (a nested repository's .git/config is as dangerous as the
// workspace's). Ancestors count: mv .git elsewhere or cp -r x/. .git/
// replaces what is protected.
func (r pathResolver) protectedEntry(c string) (string, bool) {
	if r.protected.Empty() || c == "" {
		return "", false
	}
	if r.workspace != "" && strings.HasPrefix(c, "/") {
		if e, ok := r.protected.MatchAbs(r.workspace, c, true); ok {
			return e, true
		}
	}
	rest := strings.TrimPrefix(c, "/")
	for {
		if e, ok := r.protected.Match(rest, true); ok && rest != "" {
			return e, true
		}
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return "", false
		}
		rest = rest[i+1:]
	}
}

// protectedFindings adds "write to protected path" when a write target's
// candidates fall under terminal.protected_paths.
func (a *analysis) protectedFindings(cands []string, how string, add func(key, desc string)) {
	for _, c := range cands {
		if e, ok := a.paths.protectedEntry(c); ok {
			add("write to protected path", how+" writes "+c+", which terminal.protected_paths protects ("+e+"): it can make the host run code later")
			return
		}
	}
}

// linkFindings classifies link creation by c (ln, link, cp -s/-l): a link
// to a target outside the workspace, or to one the check cannot place,
// needs approval.
func (a *analysis) linkFindings(c simpleCommand, add func(key, desc string)) {
	name := c.name()
	flags, operands := options(c.args)
	symbolic := false
	switch name {
	case "ln":
		symbolic = hasFlag(flags, "s", "--symbolic")
	case "link":
	case "cp":
		symbolic = hasFlag(flags, "s", "--symbolic-link")
		if !symbolic && !hasFlag(flags, "l", "--link") {
			return
		}
	default:
		return
	}
	sources := operands
	if len(optionValues(c.args, "t", "--target-directory")) == 0 && len(operands) > 1 {
		sources = operands[:len(operands)-1]
	}
	if name == "ln" && len(operands) == 1 {
		sources = operands // ln -s TARGET: a link named after it in the current directory
	}
	linkDirs := []string{"."}
	if t := optionValues(c.args, "t", "--target-directory"); len(t) > 0 {
		linkDirs = t
	} else if len(operands) > 1 {
		last := operands[len(operands)-1]
		linkDirs = []string{path.Dir(last), last} // LINK, or a directory to put it in
	}
	for _, src := range sources {
		if !a.linkStaysInside(src, c.dir, symbolic, linkDirs) {
			kind := "a hard link to "
			if symbolic {
				kind = "a symbolic link to "
			}
			add("link out of workspace", name+" makes "+kind+clip(src)+", which may lie outside the workspace: whoever reads the link later (hermes building its prompt, an editor) reads that file instead")
			return
		}
	}
}

// linkStaysInside reports whether a link to src is known to stay in the
// workspace. A symbolic link's relative target resolves against the
// directory the link is made in (each of linkDirs, relative to the working
// directory); without a known workspace it stays inside only when it has
// no "..". Absolute targets, and hard link sources (which resolve against
// the working directory), must lie in the known workspace.
func (a *analysis) linkStaysInside(src string, dir dirState, symbolic bool, linkDirs []string) bool {
	expanded := a.paths.expand(src)
	if strings.Contains(expanded, "$") || isDynamic(expanded) || strings.ContainsAny(expanded, "*?[") {
		return false
	}
	if symbolic && !strings.HasPrefix(expanded, "/") {
		if a.paths.workspace == "" || !dir.known {
			return !slices.Contains(strings.Split(expanded, "/"), "..")
		}
		for _, ld := range linkDirs {
			if !a.linkStaysInside(path.Join(ld, expanded), dir, false, nil) {
				return false
			}
		}
		return true
	}
	if !strings.HasPrefix(expanded, "/") && !dir.known {
		return !slices.Contains(strings.Split(expanded, "/"), "..")
	}
	cands, known := a.paths.resolve(expanded, dir)
	if !known || a.paths.workspace == "" {
		return false
	}
	for _, c := range cands {
		if !strings.HasPrefix(c, "/") {
			if slices.Contains(strings.Split(c, "/"), "..") {
				return false
			}
			continue
		}
		if c != a.paths.workspace && !strings.HasPrefix(c, a.paths.workspace+"/") {
			return false
		}
	}
	return true
}

// symlinkCall finds program text that makes links: Python os.symlink,
// os.link, Path.symlink_to/hardlink_to; Node fs.symlink(Sync), fs.link;
// Perl/PHP symlink/link; Ruby File.symlink, FileUtils.ln(_s).
var symlinkCall = lazyregexp.New(`\b(symlink|symlinkSync|symlink_to|hardlink_to|link|linkSync|ln_s|ln_sf|make_symlink)\s*\(|\bFileUtils\.ln\b|\bsymlink\s+['"$]`)

// codeLinkFindings asks about interpreter code that creates links.
func (a *analysis) codeLinkFindings(name, text string) {
	if symlinkCall().MatchString(text) {
		a.ask("link out of workspace", name+" code creates a link, which may point outside the workspace: "+clip(text))
	}
}

// gitConfigFile returns the file `git config --file F` (or -f F) writes.
func gitConfigFile(args []string) []string {
	if subcommand(args) != "config" {
		return nil
	}
	i := slices.Index(args, "config")
	return optionValues(append([]string{"config"}, args[i+1:]...), "f", "--file")
}
