package secret

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
)

// Every encoding of text that contains the secret, at any offset, contains
// one of its forms (issue 15: base64, hex, reversed and URL-encoded forms
// of the provider key reached the model).
func TestFormsCoverEncodedText(t *testing.T) {
	key := "sk-or-v1-0123456789abcdef+/=?&"
	forms := Forms(key)
	found := func(text string) bool {
		for _, f := range forms {
			if strings.Contains(text, f) {
				return true
			}
		}
		return false
	}
	for _, prefix := range []string{"", "A", "AB", "OPENROUTER_API_KEY=", "x=12", "PATH=/bin\nKEY="} {
		plain := prefix + key + "\n"
		for name, enc := range map[string]string{
			"base64":     base64.StdEncoding.EncodeToString([]byte(plain)),
			"base64url":  base64.URLEncoding.EncodeToString([]byte(plain)),
			"base64 raw": base64.RawStdEncoding.EncodeToString([]byte(plain)),
			"hex":        hex.EncodeToString([]byte(plain)),
			"HEX":        strings.ToUpper(hex.EncodeToString([]byte(plain))),
			"reversed":   reverse(plain),
			"query":      url.QueryEscape(plain),
			"path":       url.PathEscape(plain),
		} {
			if !found(enc) {
				t.Errorf("%s of %q: no form found in %q", name, plain, enc)
			}
		}
	}
	if Forms("") != nil || len(Forms("short")) != 0 {
		t.Error("empty and short values have no forms")
	}
}
