// Package ocitest runs Debian's docker-registry (the CNCF distribution
// registry) on loopback and builds small images from files for tests to
// push to it. It is imported only by tests.
package ocitest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/crypto/bcrypt"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// RegistryBinary is Debian's docker-registry package's binary.
const RegistryBinary = "/usr/bin/docker-registry"

// Registry is a docker-registry process serving on loopback.
type Registry struct {
	Host    string // 127.0.0.1:PORT
	Storage string // its filesystem storage root
	User    string // set when started with auth
	Pass    string
}

// StartRegistry starts docker-registry on a free loopback port with a
// temporary config and storage, stopped when t ends; withAuth requires
// basic auth (htpasswd) for user "hermes". Skips t when the binary is
// missing (CI installs the docker-registry package). The port is picked
// free and then handed to the registry, so another process may take it
// first: the registry then exits and another port is tried, and an
// answer counts only with this registry's own token header.
func StartRegistry(t testing.TB, withAuth bool) *Registry {
	t.Helper()
	if _, err := os.Stat(RegistryBinary); err != nil {
		t.Skipf("%s missing (apt-get install docker-registry): %v", RegistryBinary, err)
	}
	dir := t.TempDir()
	r := &Registry{Storage: filepath.Join(dir, "storage")}
	auth := ""
	if withAuth {
		r.User, r.Pass = "hermes", "s3cret-test"
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: hermes-test\n    path: %s\n", htpasswd)
	}
	var logs bytes.Buffer
	for range 5 {
		if r.start(t, dir, auth, &logs) {
			return r
		}
	}
	t.Fatalf("docker-registry did not start on a free port:\n%s", logs.String())
	return nil
}

// start runs the registry on a new free port; false when it exited
// before answering (the port was taken meanwhile).
func (r *Registry) start(t testing.TB, dir, auth string, logs *bytes.Buffer) bool {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Host = l.Addr().String()
	l.Close()
	token := make([]byte, 8)
	rand.Read(token)
	tokenHex := hex.EncodeToString(token)
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  headers:
    X-Hermes-Test-Registry: [%s]
%s`, r.Storage, r.Host, tokenHex, auth)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(RegistryBinary, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	client := &http.Client{Timeout: 5 * time.Second}
	gone := false
	waitfor.Until(t, "docker-registry to answer on "+r.Host, func() bool {
		select {
		case err := <-exited:
			fmt.Fprintf(logs, "docker-registry on %s exited: %v\n", r.Host, err)
			gone = true
			return true
		default:
		}
		resp, err := client.Get("http://" + r.Host + "/v2/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.Header.Get("X-Hermes-Test-Registry") == tokenHex &&
			(resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized)
	})
	if gone {
		return false
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return true
}

// Ref returns the reference of repo:tag in r.
func (r *Registry) Ref(repoTag string) string { return r.Host + "/" + repoTag }

// Push writes img to ref (in r) with ggcr's writer.
func (r *Registry) Push(t testing.TB, ref string, img v1.Image) {
	t.Helper()
	pref, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	opts := []remote.Option{}
	if r.User != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.User, Password: r.Pass}))
	}
	if err := remote.Write(pref, img, opts...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// BlobPath returns where r stores the blob with digest (sha256:hex).
func (r *Registry) BlobPath(digest v1.Hash) string {
	return filepath.Join(r.Storage, "docker", "registry", "v2", "blobs", digest.Algorithm, digest.Hex[:2], digest.Hex, "data")
}

// File is one tar entry of a test layer.
type File struct {
	Name     string
	Type     byte // tar.TypeReg when 0
	Mode     int64
	Data     []byte
	Linkname string
	Size     int64 // for a sparse-ish big file of zeros: Size with Data nil
	PAX      map[string]string
}

// TarBytes returns the uncompressed tar of files.
func TarBytes(t testing.TB, files []File) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.Name, Typeflag: f.Type, Mode: f.Mode, Linkname: f.Linkname, PAXRecords: f.PAX,
			ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
			if hdr.Typeflag == tar.TypeDir {
				hdr.Mode = 0o755
			}
		}
		var body io.Reader
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(f.Data))
			body = bytes.NewReader(f.Data)
			if f.Data == nil && f.Size > 0 {
				hdr.Size, body = f.Size, io.LimitReader(zeros{}, f.Size)
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if body != nil {
			if _, err := io.Copy(tw, body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Layer returns a gzip-compressed layer of files (compressed once here:
// go-containerregistry would compress an uncompressed opener's tar again
// on every read).
func Layer(t testing.TB, files []File) v1.Layer {
	t.Helper()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(TarBytes(t, files)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	data := gz.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Image stacks layers (bottom first) into an image for linux/arch with
// config cfg.
func Image(t testing.TB, arch string, cfg v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", arch, cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// BusyboxFiles are a minimal root: /bin/busybox (Debian's busybox-static)
// with sh, ls, cat, id, env, pwd and test linked to it, and /etc, /tmp,
// /root. Skips t when busybox-static is missing.
func BusyboxFiles(t testing.TB) []File {
	t.Helper()
	data, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Skipf("/bin/busybox missing (apt-get install busybox-static): %v", err)
	}
	files := []File{
		{Name: "bin/", Type: tar.TypeDir}, {Name: "etc/", Type: tar.TypeDir}, {Name: "root/", Type: tar.TypeDir, Mode: 0o700},
		{Name: "tmp/", Type: tar.TypeDir, Mode: 0o1777}, {Name: "usr/", Type: tar.TypeDir},
		{Name: "bin/busybox", Mode: 0o755, Data: data},
		{Name: "etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n")},
		{Name: "etc/group", Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
	for _, tool := range []string{"sh", "ls", "cat", "id", "env", "pwd", "test", "find", "stat", "sort", "echo", "sleep"} {
		files = append(files, File{Name: "bin/" + tool, Type: tar.TypeSymlink, Linkname: "busybox"})
	}
	return files
}
