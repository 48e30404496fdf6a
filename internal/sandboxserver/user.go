package sandboxserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/hermes-go/hermes/internal/backend"
)

// sandboxUser is the account an envd request acts as. As in E2B's
// templates, commands and file operations run as `user` (uid and gid
// 1000, home /home/user) unless the request names `root`. The E2B SDKs
// name the user in an `Authorization: Basic base64(NAME:)` header on the
// Connect services (envd ≥ 0.4.0 sends none for the default user) and in
// the `username` query parameter of /files (e2b JS SDK 2.x,
// authenticationHeader and fileUrl).
type sandboxUser struct {
	name string
	home string
	as   *backend.Account // nil = root
}

// defaultUserName is the name of the sandbox's default user.
const defaultUserName = "user"

// rootUser is root in the sandbox.
var rootUser = sandboxUser{name: "root", home: "/root"}

// newDefaultUser is the default user with host uid and gid uid.
func newDefaultUser(uid int) sandboxUser {
	return sandboxUser{name: defaultUserName, home: UserHome, as: &backend.Account{UID: uint32(uid), GID: uint32(uid)}}
}

type userKey struct{}

// requestUser returns the user r names (the default user when none); an
// unknown name is an error naming it and the known ones.
func (s *Server) requestUser(r *http.Request) (sandboxUser, error) {
	name := r.URL.Query().Get("username")
	if name == "" {
		if b64, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Basic "); ok {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
			if err != nil {
				return sandboxUser{}, fmt.Errorf("authorization header: not base64 (want Basic base64(user:))")
			}
			name, _, _ = strings.Cut(string(raw), ":")
		}
	}
	switch name {
	case "", defaultUserName:
		return s.user, nil
	case rootUser.name:
		return rootUser, nil
	}
	if len(name) > 64 {
		name = name[:64] + "…"
	}
	return sandboxUser{}, fmt.Errorf("user %q does not exist in this sandbox: use %q (the default) or %q", name, defaultUserName, rootUser.name)
}

// userOf returns the user the envd middleware resolved (the default user
// outside a request).
func (s *Server) userOf(ctx context.Context) sandboxUser {
	if u, ok := ctx.Value(userKey{}).(sandboxUser); ok {
		return u
	}
	return s.user
}

// userEnv is sb's environment acting as the request's user: its commands
// (the process service's, and those that carry the file operations) run
// with that uid and gid. Environments that copy files themselves (the
// unit tests' in-memory boxes) cannot switch users and are used as they
// are.
func (s *Server) userEnv(ctx context.Context, sb *sandbox) (backend.Environment, error) {
	env, err := s.env(ctx, sb)
	if err != nil {
		return nil, err
	}
	u := s.userOf(ctx)
	if _, streams := env.(fileStreamer); streams || u.as == nil {
		return env, nil
	}
	return runAsEnv{Environment: env, as: u.as}, nil
}

// runAsEnv runs every command of an environment as one account.
type runAsEnv struct {
	backend.Environment
	as *backend.Account
}

func (e runAsEnv) Exec(ctx context.Context, req backend.ExecRequest) (backend.ExecResult, error) {
	req.RunAs = e.as
	return e.Environment.Exec(ctx, req)
}

func (e runAsEnv) Start(ctx context.Context, req backend.ExecRequest) (backend.Process, error) {
	req.RunAs = e.as
	return e.Environment.Start(ctx, req)
}

// chowner is an environment that can give a file to a user (box.Box).
type chowner interface {
	Chown(ctx context.Context, path string, uid, gid uint32) error
}

// giveHome makes the default user u own its home and HERMES_HOME, which
// the box's init created as root at boot.
func (s *Server) giveHome(ctx context.Context, env backend.Environment, u sandboxUser) error {
	c, ok := env.(chowner)
	if !ok {
		return nil
	}
	for _, p := range []string{UserHome, UserHome + "/.hermes", UserHome + "/.hermes/.sandbox"} {
		if err := c.Chown(ctx, p, u.as.UID, u.as.GID); err != nil {
			return fmt.Errorf("give %s to %s: %w", p, u.name, err)
		}
	}
	return nil
}
