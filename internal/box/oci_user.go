package box

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/ociimage"
)

// maxAccountFile bounds the image's /etc/passwd and /etc/group read to
// resolve its User.
const maxAccountFile = 1 << 20

// imageUser returns the User of the OCI image the box with state dir dir
// was made from ("" for none or another base).
func imageUser(dir string) string {
	u, err := ociimage.ReadBoxImage(dir)
	if err != nil || u == nil {
		return ""
	}
	return strings.TrimSpace(u.Config.User)
}

// rootUser reports whether an image-spec User names root (user part
// root or 0, group part none, root or 0).
func rootUser(spec string) bool {
	user, group, _ := strings.Cut(spec, ":")
	return (user == "0" || user == "root") && (group == "" || group == "0" || group == "root")
}

// warnImageUser warns once (Options.Warn) that the image of the box with
// state dir dir names a User that does not apply: hermes is not root, so
// the box runs in a user namespace where only root exists (mapped to the
// caller's uid; mapping more uids takes setuid helpers, newuidmap, which
// hermes does not use), and its commands run as that root.
func (m *Manager) warnImageUser(dir string) {
	u, err := ociimage.ReadBoxImage(dir)
	if err != nil || u == nil || m.opts.Warn == nil {
		return
	}
	spec := strings.TrimSpace(u.Config.User)
	if spec == "" || rootUser(spec) {
		return
	}
	msg := fmt.Sprintf("hermes: warning: image %s sets User %q, which cannot apply without root: hermes runs as uid %d, so the box runs in a user namespace where only root exists, and its commands run as root there (uid %d outside); run hermes as root to run them as %q\n",
		u.Ref, spec, os.Geteuid(), os.Geteuid(), spec)
	m.warnMu.Lock()
	defer m.warnMu.Unlock()
	if m.warned == nil {
		m.warned = map[string]bool{}
	}
	if !m.warned[msg] {
		m.warned[msg] = true
		io.WriteString(m.opts.Warn, msg)
	}
}

// imageRunAs returns the account the box's commands run as when they name
// none: its OCI image's User (image-spec config.md: user, uid, user:group,
// uid:gid, uid:group, user:gid), names resolved from the box's own
// /etc/passwd and /etc/group, read by the box's init inside the box (a
// link there cannot lead out of it), at most maxAccountFile each. As
// Docker does, a uid with no passwd entry and no group gets gid 0. nil
// when the image sets no User, names root, or hermes does not run as
// root (the box then runs in a user namespace without other users; its
// init has no CAP_SETUID: Manager.initSpec). Resolved once per Box.
func (b *Box) imageRunAs(ctx context.Context) (*wire.Account, error) {
	b.userOnce.Do(func() {
		spec := imageUser(b.stateDir)
		if spec == "" || os.Geteuid() != 0 {
			return
		}
		a, err := b.resolveUser(ctx, spec)
		if err != nil {
			b.userErr = fmt.Errorf("the image's User %q: %w", spec, err)
			return
		}
		if a.UID != 0 || a.GID != 0 {
			b.user = a
		}
		if a.UID != 0 && !b.Attached() {
			b.userErr = b.grantSudo(ctx, a.UID)
		}
	})
	return b.user, b.userErr
}

// grantSudo lets uid use the box's sudo, when it has one (Options.SudoUIDs):
// E2B gives the sandbox's user passwordless sudo, and on an image that
// user is the image's User (wire.OpGrantSudo).
func (b *Box) grantSudo(ctx context.Context, uid uint32) error {
	r, err := b.roundTrip(ctx, wire.Request{Op: wire.OpGrantSudo, Owner: &wire.Account{UID: uid}})
	if err == nil && r.Kind == wire.KindError {
		err = errors.New(r.Err)
	}
	if err != nil {
		return fmt.Errorf("give the image's User (uid %d) sudo: %w", uid, err)
	}
	return nil
}

// imageSudoPathDirs returns the directories of the PATH of the OCI image
// the box with state dir dir was made from, when that PATH lacks the
// directory of wire.SudoPath (wire.InitSpec.SudoPathDirs); nil otherwise.
func imageSudoPathDirs(dir string) []string {
	u, err := ociimage.ReadBoxImage(dir)
	if err != nil || u == nil {
		return nil
	}
	for _, kv := range u.Config.Env {
		path, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		dirs := strings.Split(path, ":")
		if slices.Contains(dirs, filepath.Dir(wire.SudoPath)) {
			return nil
		}
		return dirs
	}
	return nil
}

// resolveUser resolves user[:group] against the box's account files.
func (b *Box) resolveUser(ctx context.Context, spec string) (*wire.Account, error) {
	user, group, hasGroup := strings.Cut(spec, ":")
	a := &wire.Account{}
	if uid, err := strconv.ParseUint(user, 10, 32); err == nil {
		a.UID = uint32(uid)
		if !hasGroup {
			if e, ok, err := b.accountEntry(ctx, "/etc/passwd", 2, user); err != nil {
				return nil, err
			} else if ok {
				a.GID = e.gid
			}
		}
	} else {
		e, ok, err := b.accountEntry(ctx, "/etc/passwd", 0, user)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("no user %q in the image's /etc/passwd", user)
		}
		a.UID, a.GID = e.id, e.gid
	}
	if !hasGroup {
		return a, nil
	}
	if gid, err := strconv.ParseUint(group, 10, 32); err == nil {
		a.GID = uint32(gid)
		return a, nil
	}
	e, ok, err := b.accountEntry(ctx, "/etc/group", 0, group)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("no group %q in the image's /etc/group", group)
	}
	a.GID = e.id
	return a, nil
}

// accountEntry is one line of /etc/passwd (id = uid, gid) or /etc/group
// (id = gid).
type accountEntry struct{ id, gid uint32 }

// accountEntry finds the first line of file (inside the box) whose field
// col (0 = name, 2 = id) is key. A missing file has no entries.
func (b *Box) accountEntry(ctx context.Context, file string, col int, key string) (accountEntry, bool, error) {
	st, err := b.Stat(ctx, file)
	if err != nil {
		return accountEntry{}, false, nil
	}
	if st.Size > maxAccountFile {
		return accountEntry{}, false, fmt.Errorf("%s is %d bytes, over %d", file, st.Size, maxAccountFile)
	}
	data, err := b.ReadFile(ctx, file)
	if err != nil {
		return accountEntry{}, false, nil
	}
	if len(data) > maxAccountFile {
		return accountEntry{}, false, fmt.Errorf("%s is over %d bytes", file, maxAccountFile)
	}
	return parseAccountLine(data, col, key)
}

// parseAccountLine finds the first line of an /etc/passwd or /etc/group
// text whose field col is key.
func parseAccountLine(data []byte, col int, key string) (accountEntry, bool, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxAccountFile)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 3 || f[col] != key {
			continue
		}
		id, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			continue
		}
		e := accountEntry{id: uint32(id)}
		if len(f) >= 4 {
			if gid, err := strconv.ParseUint(f[3], 10, 32); err == nil {
				e.gid = uint32(gid)
			}
		}
		return e, true, nil
	}
	return accountEntry{}, false, sc.Err()
}
