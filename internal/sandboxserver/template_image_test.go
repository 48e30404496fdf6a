package sandboxserver_test

import (
	"archive/tar"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hermes-go/hermes/internal/ociimage/ocitest"
)

// imageUID is the uid of the test image's User (no host account has it).
const imageUID = "4242"

// busyboxApplets are links in /bin to every applet of the host's busybox
// (the sandbox's file operations need mkdir, mv, rm, dirname...).
func busyboxApplets(t *testing.T) []ocitest.File {
	t.Helper()
	out, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		t.Skipf("/bin/busybox --list: %v", err)
	}
	var files []ocitest.File
	for _, name := range strings.Fields(string(out)) {
		switch name {
		case "busybox", "sh", "ls", "cat", "id", "env", "pwd", "test", "find", "stat", "sort", "echo", "sleep": // in BusyboxFiles
			continue
		}
		files = append(files, ocitest.File{Name: "bin/" + name, Type: tar.TypeSymlink, Linkname: "busybox"})
	}
	return files
}

// A sandbox template made from an OCI image in a registry (hermes sandbox
// serve --template NAME=REF): the E2B SDK's sandbox sees the image's files
// and Env, starts in its WorkingDir and runs as its User, who has sudo on
// the image's PATH (/bin only, without /usr/local/bin); a template whose
// image is missing fails the create with the template and reference named.
func TestTemplateFromOCIImage(t *testing.T) {
	node := needBoxesAndNode(t)
	reg := ocitest.StartRegistry(t, false)
	base := ocitest.Layer(t, append(ocitest.BusyboxFiles(t), busyboxApplets(t)...))
	app := ocitest.Layer(t, []ocitest.File{{Name: "etc/", Type: tar.TypeDir},
		{Name: "etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\napp:x:" + imageUID + ":" + imageUID + "::/opt/app:/bin/sh\n")},
		{Name: "opt/", Type: tar.TypeDir}, {Name: "opt/app/", Type: tar.TypeDir},
		{Name: "opt/app/hello.txt", Data: []byte("hello from the image\n")}})
	ref := reg.Ref("hermes/app:test")
	reg.Push(t, ref, ocitest.Image(t, runtime.GOARCH, v1.Config{Env: []string{"PATH=/bin", "GREETING=from-image"},
		WorkingDir: "/opt/app", User: "app"}, base, app))
	missing := reg.Ref("hermes/missing:test")
	// Static, as released (make build): the image has no libc, and its
	// sudo is the hermes binary.
	bin := buildHermes(t, "CGO_ENABLED=0")
	s := serve(t, bin, "--template", "app="+ref, "--template", "broken="+missing)
	out := s.node(t, node, "template_image.mjs", "TEMPLATE=app", "IMAGE_UID="+imageUID, "BROKEN_TEMPLATE=broken", "BROKEN_REF="+missing)
	if !strings.Contains(out, "template image ok") {
		t.Fatalf("template_image.mjs printed %q", out)
	}
}
