package vercel

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFindProjectLinkNearest: the nearest .vercel/project.json at or above
// the directory is read; a broken one names its file.
func TestFindProjectLinkNearest(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "app", "src", "pkg")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, found, err := FindProjectLink(deep); found || err != nil {
		t.Fatalf("unlinked: %v %v", found, err)
	}
	write := func(dir, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, ".vercel"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".vercel", "project.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(root, `{"projectId":"prj_outer","orgId":"team_outer"}`)
	write(filepath.Join(root, "app"), `{"projectId":"prj_abc123","orgId":"team_xyz789","settings":{}}`)
	link, found, err := FindProjectLink(deep)
	if err != nil || !found || link.ProjectID != "prj_abc123" || link.OrgID != "team_xyz789" || !strings.HasSuffix(link.Path, filepath.Join("app", ".vercel", "project.json")) {
		t.Fatalf("%+v %v %v", link, found, err)
	}
	write(filepath.Join(root, "app"), `{"projectId":"prj_x\u001b[31m","orgId":"team_x"}`)
	if _, _, err := FindProjectLink(deep); err == nil || !strings.Contains(err.Error(), "project.json") {
		t.Errorf("bad id: %v", err)
	}
}

func jwt(payload string) string {
	return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".c2ln"
}

func TestOIDCExpiry(t *testing.T) {
	exp, err := OIDCExpiry(jwt(`{"exp":1764950400,"owner_id":"team_1"}`))
	if err != nil || !exp.Equal(time.Unix(1764950400, 0)) {
		t.Errorf("%v %v", exp, err)
	}
	padded := "a." + base64.URLEncoding.EncodeToString([]byte(`{"exp":1}`)) + ".b"
	if _, err := OIDCExpiry(padded); err != nil {
		t.Errorf("padded payload: %v", err)
	}
	for _, bad := range []string{"", "abc", jwt(`{"sub":"x"}`), jwt(`not json`), "a.!!!.b"} {
		if _, err := OIDCExpiry(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
