package config

import (
	"os"
	"path/filepath"
)

// Home returns HERMES_HOME: the HERMES_HOME variable when set, else
// ~/.hermes. getenv is os.Getenv in production and a map lookup in tests.
func Home(getenv func(string) string) string {
	if h := getenv("HERMES_HOME"); h != "" {
		return h
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".hermes")
}
