package sandboxserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/backend"
)

// Templates from OCI images (issue 27). A Template with an Image is made
// from that image as `hermes box start --image` makes a box: the image's
// layers are the box's read-only base (Config.Boxes gets it through
// Server.Image), its Env applies to every command (under the template's,
// the server's and the sandbox's envs), its WorkingDir is where commands
// start when they name no cwd, and its User, when it names an account
// other than root, is the account of the sandbox's default user `user`
// (resolved in the image's /etc/passwd; HOME stays /home/user, given to
// it). A uid that a host account has is not taken (the sandbox has no
// user namespace: see ChooseUserUID): `user` then keeps Config.UserUID
// and the server logs why. `root` is root whatever the image says.
//
// Each image is pulled once, on the first create from its template (or
// earlier, WarmImages), by Config.PullImage; creates wait for the pull in
// progress. A pull that fails fails the create (500, naming the template
// and the reference) and is tried again by the next create.

// imagePull is one template image's pull: done closes when it ends.
type imagePull struct {
	done chan struct{}
	err  error
}

// imagePulls are the pulls of the template images, by template name.
type imagePulls struct {
	mu    sync.Mutex
	pulls map[string]*imagePull
}

// imageBox is a box made from an OCI image (box's taskEnv).
type imageBox interface {
	// ImageWorkdir is the image's WorkingDir ("" none).
	ImageWorkdir() string
	// ImageAccount is the account the image's User names (nil: none or
	// root).
	ImageAccount(ctx context.Context) (*backend.Account, error)
}

// Image returns the OCI image of the template of the sandbox of task, ""
// for none (box.Options.Image).
func (s *Server) Image(task string) string {
	sb := s.lookup(strings.TrimPrefix(task, TaskPrefix))
	if sb == nil {
		return ""
	}
	return s.cfg.Templates[sb.template].Image
}

// WarmImages starts the pull of every template image in the background
// (a create waits for it; a failure is logged and tried again by the
// next create from that template).
func (s *Server) WarmImages() {
	for name, tpl := range s.cfg.Templates {
		if tpl.Image != "" && s.cfg.PullImage != nil {
			go func() {
				if err := s.pullTemplate(context.Background(), name, tpl); err != nil {
					s.cfg.Log.Error("pull a template's image", "template", name, "image", tpl.Image, "err", err)
				} else {
					s.cfg.Log.Info("template image ready", "template", name, "image", tpl.Image)
				}
			}()
		}
	}
}

// pullTemplate makes sure the image of template name is pulled: once,
// shared by concurrent callers; a failed pull is forgotten so the next
// call tries again. The pull itself outlives ctx (another create may be
// waiting for it); the wait does not.
func (s *Server) pullTemplate(ctx context.Context, name string, tpl Template) error {
	if tpl.Image == "" || s.cfg.PullImage == nil {
		return nil
	}
	s.images.mu.Lock()
	if s.images.pulls == nil {
		s.images.pulls = map[string]*imagePull{}
	}
	p := s.images.pulls[name]
	if p == nil {
		p = &imagePull{done: make(chan struct{})}
		s.images.pulls[name] = p
		go func() {
			p.err = s.cfg.PullImage(context.Background(), tpl.Image)
			if p.err != nil {
				s.images.mu.Lock()
				delete(s.images.pulls, name)
				s.images.mu.Unlock()
			}
			close(p.done)
		}()
	}
	s.images.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.err != nil {
		return fmt.Errorf("template %q: pull image %s: %w", name, tpl.Image, p.err)
	}
	return nil
}

// writePullError answers a create whose template image could not be
// pulled: E2B's error body, status 500, naming template and reference.
func writePullError(w http.ResponseWriter, name string, err error) {
	if errors.Is(err, context.Canceled) {
		writeError(w, http.StatusInternalServerError, "template %q: the create was cancelled while its image was pulled", name)
		return
	}
	writeError(w, http.StatusInternalServerError, "%v; no sandbox was created (fix the reference given with hermes sandbox serve --template %s=REF, or the registry, and create again)", err, name)
}

// imageSetup is what a sandbox takes from its template's image: the
// default user's account and the commands' default working directory.
type imageSetup struct {
	user    sandboxUser
	workdir string
}

// imageSetupOf returns sb's image setup (resolved once, in its box); for
// a sandbox whose template has no image, the server's default user.
func (s *Server) imageSetupOf(ctx context.Context, sb *sandbox) (imageSetup, error) {
	if s.cfg.Templates[sb.template].Image == "" {
		return imageSetup{user: s.user}, nil
	}
	sb.mu.Lock()
	set := sb.image
	sb.mu.Unlock()
	if set != nil {
		return *set, nil
	}
	env, err := s.env(ctx, sb)
	if err != nil {
		return imageSetup{}, err
	}
	out := imageSetup{user: s.user}
	ib, ok := env.(imageBox)
	if !ok {
		return out, nil
	}
	out.workdir = ib.ImageWorkdir()
	acct, err := ib.ImageAccount(ctx)
	if err != nil {
		return imageSetup{}, err
	}
	if acct != nil {
		if host, taken := s.hostAccount(int(acct.UID)); taken && int(acct.UID) != s.cfg.UserUID {
			s.cfg.Log.Warn("the image's User has the uid of a host account: the sandbox's user keeps its own uid",
				"sandbox", sb.id, "image_uid", acct.UID, "host_account", host, "uid", s.cfg.UserUID)
		} else {
			out.user = sandboxUser{name: defaultUserName, home: UserHome, as: acct}
		}
	}
	sb.mu.Lock()
	sb.image = &out
	sb.mu.Unlock()
	return out, nil
}

// hostAccount reports the host account that has uid (Config.HostAccount).
func (s *Server) hostAccount(uid int) (string, bool) {
	if s.cfg.HostAccount == nil {
		return "", false
	}
	return s.cfg.HostAccount(uid)
}

// imageRoot is root for a sandbox on an image: an explicit uid 0, since
// a command that names no account runs as the image's User.
func imageRoot() sandboxUser {
	return sandboxUser{name: rootUser.name, home: rootUser.home, as: &backend.Account{}}
}

// userFor returns the account a request naming u acts as in sb: the
// image's account for the default user, explicit root on an image.
func (s *Server) userFor(ctx context.Context, sb *sandbox, u sandboxUser) (sandboxUser, error) {
	if s.cfg.Templates[sb.template].Image == "" {
		return u, nil
	}
	if u.name == rootUser.name {
		return imageRoot(), nil
	}
	set, err := s.imageSetupOf(ctx, sb)
	return set.user, err
}
