// Package secret is the one rule for what is a secret, used by config
// (masking, .env placement), the backends (scrubbing command environments)
// and redaction, and the forms a secret value can take in text (Forms).
package secret

import (
	"slices"
	"strings"
)

// names are credential variables whose names fit no pattern below (Hermes
// "environment-variables.md", "security.md").
var names = []string{
	"FAL_KEY", "MODAL_TOKEN_ID", "AWS_ACCESS_KEY_ID", "GH_TOKEN", "GITHUB_TOKEN",
	"API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD",
	"API_SERVER_KEY", // the gateway's API server bearer key
}

// suffixes and infixes classify names that hold credentials.
var (
	suffixes = []string{"_API_KEY", "APIKEY", "_TOKEN", "_TOKEN_ID", "_SECRET", "_PASSWORD", "_ACCESS_KEY",
		"_ACCESS_KEY_ID", "_PRIVATE_KEY", "_SECRET_KEY", "_AUTH_KEY"}
	infixes = []string{"PASSWORD", "PASSWD", "SECRET", "CREDENTIAL"}
)

// IsName reports whether a variable name or config key holds a secret:
// one of the listed provider variables (FAL_KEY, MODAL_TOKEN_ID,
// AWS_ACCESS_KEY_ID...), any name ending in _API_KEY, _TOKEN, _TOKEN_ID,
// _SECRET, _PASSWORD, _ACCESS_KEY(_ID), _PRIVATE_KEY, _SECRET_KEY or
// _AUTH_KEY, or containing PASSWORD, PASSWD, SECRET or CREDENTIAL. Case is
// ignored and dots count as underscores, so the config key model.api_key
// is one.
func IsName(name string) bool {
	n := strings.ToUpper(strings.ReplaceAll(name, ".", "_"))
	if n == "" {
		return false
	}
	if slices.Contains(names, n) {
		return true
	}
	for _, s := range suffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, s := range infixes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
