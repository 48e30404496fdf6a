package egress

import (
	"io"
	"strings"
	"testing"
)

// BenchmarkRedactorThroughput: 1 MiB of JSON-like text through the
// response redactor of a box with two secrets.
func BenchmarkRedactorThroughput(b *testing.B) {
	r := newRedactor([]*boxSecret{
		{name: "A", value: realKey, placeholder: "hermes-secret-A-0123456789abcdef0123456789abcdef"},
		{name: "B", value: "ghp_abcdefghijklmnopqrstuvwxyz012345", placeholder: "hermes-secret-B-0123456789abcdef0123456789abcdef"},
	})
	line := `{"id": 12345, "name": "a repository name", "url": "https:\/\/api.example.com\/repos\/x?y=1&z=%2F", "ok": true}` + "\n"
	payload := strings.Repeat(line, (1<<20)/len(line))
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		io.Copy(io.Discard, newRedactingReader(strings.NewReader(payload), r))
	}
}
