package box

import (
	"archive/tar"
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// The image's /etc/passwd and /etc/group lines resolve User names; junk
// lines and non-numeric ids are skipped, the first match wins.
func TestParseAccountLine(t *testing.T) {
	passwd := []byte("root:x:0:0:root:/root:/bin/sh\nbroken\nodd:x:abc:1::/:/bin/sh\nhermes:x:1000:1001:Hermes:/home/hermes:/bin/sh\nhermes:x:2000:2000::/:/bin/sh\n")
	cases := []struct {
		col       int
		key       string
		id, gid   uint32
		wantFound bool
	}{
		{0, "hermes", 1000, 1001, true},
		{2, "1000", 1000, 1001, true},
		{0, "odd", 0, 0, false},
		{0, "nobody", 0, 0, false},
		{0, "broken", 0, 0, false},
	}
	for _, c := range cases {
		e, ok, err := parseAccountLine(passwd, c.col, c.key)
		if err != nil || ok != c.wantFound || (ok && (e.id != c.id || e.gid != c.gid)) {
			t.Errorf("passwd col %d %q: %+v %v %v", c.col, c.key, e, ok, err)
		}
	}
	e, ok, err := parseAccountLine([]byte("staff:x:50:hermes,other\n"), 0, "staff")
	if err != nil || !ok || e.id != 50 {
		t.Errorf("group staff: %+v %v %v", e, ok, err)
	}
}

// A box from an OCI image runs its commands as the image's User: numeric
// uid[:gid] (a uid without a passwd entry gets gid 0, as Docker), or names
// resolved from the image's own /etc/passwd and /etc/group; an unknown
// name is a clear error, not a command run as root.
func TestBoxRunsCommandsAsImageUser(t *testing.T) {
	needBoxes(t)
	reg := ocitest.StartRegistry(t, false)
	base := ocitest.Layer(t, ocitest.BusyboxFiles(t))
	accounts := ocitest.Layer(t, []ocitest.File{{Name: "etc/", Type: tar.TypeDir},
		{Name: "etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\nsvc:x:1234:1234::/tmp:/bin/sh\n")},
		{Name: "etc/group", Data: []byte("root:x:0:\nstaff:x:5678:svc\n")}})
	cases := []struct{ user, want, wantErr string }{
		{"svc", "1234 1234", ""},
		{"svc:staff", "1234 5678", ""},
		{"1234", "1234 1234", ""},
		{"4321", "4321 0", ""},
		{"7:8", "7 8", ""},
		{"nosuch", "", `no user "nosuch" in the image's /etc/passwd`},
	}
	for i, c := range cases {
		ref := reg.Ref("hermes/user:" + strconv.Itoa(i))
		reg.Push(t, ref, ocitest.Image(t, runtime.GOARCH, v1.Config{Env: []string{"PATH=/bin"}, User: c.user}, base, accounts))
		e := startTestBox(t, func(o *Options) { o.Terminal.BoxImage = ref })
		ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
		res, err := e.env.Exec(ctx, backend.ExecRequest{Command: `echo $(id -u) $(id -g)`, Timeout: time.Minute})
		cancel()
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("User %q: got %v (output %q), want an error with %q", c.user, err, res.Output, c.wantErr)
			}
			continue
		}
		if err != nil || strings.TrimSpace(string(res.Output)) != c.want {
			t.Errorf("User %q: %v, id %q, want %q", c.user, err, res.Output, c.want)
		}
	}
}
