package secret

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
)

// minFormLen is the shortest derived form kept: shorter strings would
// redact ordinary text.
const minFormLen = 8

// Forms returns value and the encodings of it that commonly carry a
// secret out of a process, for redaction: base64 (standard and URL
// alphabets, at each of the three byte alignments the value can have
// inside a longer encoded text, so `base64 .env` is covered as well as
// `echo -n $KEY | base64`), lower- and upper-case hex, the value
// reversed, and its URL (query and path) encodings. Values shorter than
// 8 bytes have no forms; shorter forms and duplicates are left out. Redaction is a last line of
// defence; split, wrapped or otherwise transformed values still pass.
func Forms(value string) []string {
	if len(value) < minFormLen {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if len(s) >= minFormLen && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	add(value)
	for _, b64 := range base64Forms(value) {
		add(b64)
		add(strings.NewReplacer("+", "-", "/", "_").Replace(b64))
	}
	h := hex.EncodeToString([]byte(value))
	add(h)
	add(strings.ToUpper(h))
	add(reverse(value))
	add(url.QueryEscape(value))
	add(url.PathEscape(value))
	return out
}

// base64Forms returns, for each alignment k = 0, 1, 2 of the value's first
// byte within a 3-byte group, the base64 characters that depend on the
// value's bytes alone: the encoding of k filler bytes plus the value,
// without the characters that mix in filler bits or whatever follows.
func base64Forms(value string) []string {
	var out []string
	n := len(value)
	for k := 0; k < 3; k++ {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, k), value...))
		first := (8*k + 5) / 6    // characters holding any filler bit
		last := (8 * (k + n)) / 6 // characters made of value bits only end here
		if last > first {
			out = append(out, enc[first:last])
		}
	}
	return out
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
