package selfupdate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeProxy lays out a file:// module proxy holding versions of mod.
func writeProxy(t *testing.T, mod string, list string, infos map[string]string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, filepath.FromSlash(mod), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "list"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	for v, info := range infos {
		if err := os.WriteFile(filepath.Join(dir, v+".info"), []byte(info), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestLatestFromFileProxy: the newest release wins over older ones, a
// pre-release and an +incompatible version; its date comes from .info;
// the module path is !-escaped (capitals).
func TestLatestFromFileProxy(t *testing.T) {
	root := writeProxy(t, "github.com/!hermes-!go/hermes", "v0.20.0\nv0.99.0\nv0.100.0-rc.1\nv2.0.0+incompatible\nv0.9.0\n",
		map[string]string{"v0.99.0": `{"Version":"v0.99.0","Time":"2026-11-30T10:00:00Z"}`})
	rel, err := Finder{GOPROXY: "file://" + root}.Latest(context.Background(), "github.com/Hermes-Go/hermes")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != "v0.99.0" || rel.Time.Format("2006-01-02") != "2026-11-30" {
		t.Errorf("latest = %+v", rel)
	}
	if !Newer(rel.Version, "0.21.0") || Newer("v0.21.0", "0.21.0") || Newer("v0.20.0", "v0.21.0") {
		t.Error("Newer")
	}
}

// TestGOPROXYList: a 404 from the first proxy of a ","-list falls through
// to the next; direct and off are skipped; @latest answers when @v/list
// is empty.
func TestGOPROXYList(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	root := writeProxy(t, "example.com/m", "", nil)
	if err := os.WriteFile(filepath.Join(root, "example.com", "m", "@latest"), []byte(`{"Version":"v1.2.3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := Finder{GOPROXY: gone.URL + ",direct,file://" + root}.Latest(context.Background(), "example.com/m")
	if err != nil || rel.Version != "v1.2.3" {
		t.Fatalf("%+v %v", rel, err)
	}
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	defer broken.Close()
	if _, err := (Finder{GOPROXY: broken.URL + ",file://" + root}).Latest(context.Background(), "example.com/m"); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("a 500 in a ,-list must stop: %v", err)
	}
	if rel, err := (Finder{GOPROXY: broken.URL + "|file://" + root}).Latest(context.Background(), "example.com/m"); err != nil || rel.Version != "v1.2.3" {
		t.Errorf("a |-list falls through any error: %+v %v", rel, err)
	}
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(403) }))
	defer refusing.Close()
	if _, err := (Finder{GOPROXY: refusing.URL}).Latest(context.Background(), "example.com/m"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "HTTP 403") {
		t.Errorf("a 403 is a refusal, not an unreachable proxy: %v", err)
	}
	if _, err := (Finder{GOPROXY: "off"}).Latest(context.Background(), "example.com/m"); err == nil || !strings.Contains(err.Error(), "GOPROXY") {
		t.Errorf("off: %v", err)
	}
}
