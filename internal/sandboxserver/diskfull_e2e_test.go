package sandboxserver_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// fillDisk writes a file in dir until its file system is full (ENOSPC)
// and returns the file's path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	// The last bytes a partial write left room for.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			return path
		}
	}
}

// boxDirs lists the box state directories under home.
func boxDirs(t *testing.T, home string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(home, "boxes"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// A create on a node whose HERMES_HOME has no space left is refused in
// E2B's {code, message} shape with 507, naming the node and "no space",
// and leaves no sandbox in the catalog (list) and no box directory; the
// sandbox that ran before keeps serving its files; once space is freed,
// creates work again.
func TestCreateOnAFullDisk(t *testing.T) {
	needBoxes(t)
	bin := buildHermes(t)
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", home, "tmpfs", 0, "size=96m,mode=0755"); err != nil {
		t.Skipf("cannot mount a small tmpfs as the node's HERMES_HOME: %v", err)
	}
	t.Cleanup(func() { // after the server's cleanup (registered later, run first)
		if err := syscall.Unmount(home, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", home, err)
		}
	})
	api, envd := testnet.FreeAddr(t), testnet.FreeAddr(t)
	s := &served{bin: bin, home: home, apiURL: "http://" + api, envdURL: "http://" + envd, key: "disk-key-1"}
	startServer(t, bin, home, api, envd, s.key)
	id, token := s.sandboxOf(t)
	req := s.envdRequest(t, "POST", "/files?path=/home/user/kept.txt", id, token, strings.NewReader("kept before the disk filled"))
	req.Header.Set("Content-Type", "application/octet-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("write a file in the running sandbox: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	before := boxDirs(t, home)

	filler := fillDisk(t, home)
	req, _ = http.NewRequest("POST", s.apiURL+"/v2/sandboxes", strings.NewReader(`{"templateID":"base","timeout":120}`))
	req.Header.Set("X-API-Key", s.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(string(body), `"code":507`) ||
		!strings.Contains(string(body), "node local") || !strings.Contains(string(body), "no space") {
		t.Fatalf("create on a full disk: %d %s, want 507 in E2B's shape naming node local and \"no space\"", resp.StatusCode, body)
	}
	waitfor.Until(t, "no box left of the refused create", func() bool { return len(boxDirs(t, home)) == len(before) })
	if listed := string(s.do(t, "GET", "/v2/sandboxes", "", http.StatusOK)); strings.Count(listed, `"sandboxID"`) != 1 || !strings.Contains(listed, id) {
		t.Errorf("the catalog after the refused create lists %s, want only %s", listed, id)
	}
	resp, err = http.DefaultClient.Do(s.envdRequest(t, "GET", "/files?path=/home/user/kept.txt", id, token, nil))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != "kept before the disk filled" {
		t.Errorf("the running sandbox's file on the full disk: %d %q", resp.StatusCode, got)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s.sandboxOf(t)
}
