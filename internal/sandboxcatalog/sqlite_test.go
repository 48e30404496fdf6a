package sandboxcatalog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/sandboxcatalog/catalogtest"
)

func TestSQLiteConformance(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) func() sandboxcatalog.Catalog {
		path := filepath.Join(t.TempDir(), sandboxcatalog.FileName)
		return func() sandboxcatalog.Catalog {
			c, err := sandboxcatalog.OpenSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	})
}

// The catalog holds envd tokens and envVars: only its user reads it.
func TestSQLiteFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "home", sandboxcatalog.FileName)
	c, err := sandboxcatalog.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %v, %v; want 0600", path, st.Mode().Perm(), err)
	}
}

// A catalog written by a newer hermes is refused, naming the file.
func TestSQLiteRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), sandboxcatalog.FileName)
	c, err := sandboxcatalog.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := sandboxcatalog.SetUserVersionForTest(path, 99); err != nil {
		t.Fatal(err)
	}
	if _, err := sandboxcatalog.OpenSQLite(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "newer hermes") {
		t.Fatalf("schema 99: %v", err)
	}
}
