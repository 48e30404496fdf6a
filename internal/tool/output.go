package tool

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// MaxOutputChars is how many characters of command output the model sees
// (Hermes terminal tool: 50K chars, 40 % head / 60 % tail).
const MaxOutputChars = 50_000

// redactedPlaceholder replaces secret values in output shown to the model.
const redactedPlaceholder = "[REDACTED]"

// ansiSequence matches terminal escape sequences (colors, cursor moves, OSC
// titles); an OSC without its BEL/ST terminator runs to the end of the line.
// It also matches SGR colour sequences whose ESC byte was lost on the way
// ("[32mok[0m", "?[32m" where a tool replaced ESC by "?"): a bracket, one
// or more numeric parameters and "m".
var ansiSequence = lazyregexp.New(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(\x07|\x1b\\)?|\x1b[@-Z\\-_]|\??\[[0-9]{1,3}(;[0-9]{1,3})*m`)

// cleanOutput turns raw command output into text for the model: bytes are
// decoded once, as a whole, so a multibyte character split across reads is
// intact; output that is not UTF-8 is decoded from charset, or its invalid
// bytes are escaped as \xNN (decodeOutput); terminal escape sequences are
// removed; secret values are replaced by [REDACTED].
func cleanOutput(raw []byte, charset string, secrets []string) string {
	s := decodeOutput(raw, charset)
	s = ansiSequence().ReplaceAllString(s, "")
	return redact(s, secrets)
}

// redact replaces every occurrence of each secret value in s.
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, redactedPlaceholder)
		}
	}
	return s
}

// capOutput keeps at most max characters of s: the first 40 % and the last
// 60 %, with a marker in between saying how many characters and lines were
// cut and, when fullPath is set, where the whole output is. Cuts fall on
// character boundaries. It reports whether anything was cut.
func capOutput(s string, max int, fullPath string) (string, bool) {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, false
	}
	headChars := max * 40 / 100
	tailChars := max - headChars
	headEnd := byteOffset(s, headChars)
	tailStart := byteOffset(s, n-tailChars)
	cut := s[headEnd:tailStart]
	marker := truncationMarker(int64(n-headChars-tailChars), int64(strings.Count(cut, "\n")), fullPath)
	return s[:headEnd] + marker + s[tailStart:], true
}

// CapText keeps at most max characters of s: the first 40 % and the last
// 60 %, with a marker saying how many characters and lines were cut (for
// tools whose output is not saved anywhere, such as MCP tools).
func CapText(s string, max int) string {
	out, _ := capOutput(s, max, "")
	return out
}

// truncationMarker is the line that stands where output was cut.
func truncationMarker(chars, lines int64, fullPath string) string {
	marker := fmt.Sprintf("\n\n[OUTPUT TRUNCATED: %d characters (%d lines) omitted from the middle", chars, lines)
	if fullPath != "" {
		marker += "; full output saved to " + fullPath + " (read it with read_file or search_files)"
	}
	return marker + "]\n\n"
}

// byteOffset returns the byte index of the rune at index runes in s.
func byteOffset(s string, runes int) int {
	i := 0
	for pos := range s {
		if i == runes {
			return pos
		}
		i++
	}
	return len(s)
}

// copyRedacted copies src to dst line by line, decoding it as
// decodeOutput does and replacing secret values. Lines are decoded whole
// ('\n' never occurs inside a multibyte character of UTF-8, GBK or
// Shift_JIS); lines longer than 1 MiB are processed in 1 MiB pieces.
func copyRedacted(dst io.Writer, src io.Reader, charset string, secrets []string) error {
	r := bufio.NewReaderSize(src, 1<<20)
	w := bufio.NewWriter(dst)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := w.WriteString(redact(decodeOutput(line, charset), secrets)); werr != nil {
				return werr
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			return w.Flush()
		}
		if err != nil {
			return err
		}
	}
}

// saveRedacted rewrites the raw output file at rawPath as its redacted
// UTF-8 version (decoded from charset, see decodeOutput) at the same path.
func saveRedacted(rawPath, charset string, secrets []string) error {
	raw, err := os.Open(rawPath)
	if err != nil {
		return err
	}
	defer raw.Close()
	tmp, err := os.CreateTemp(dirOf(rawPath), ".redact-*")
	if err != nil {
		return err
	}
	if err := copyRedacted(tmp, raw, charset, secrets); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), rawPath)
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "."
}

// looksBinary reports data that is not text: a NUL byte in the first 8000
// bytes (the heuristic of git and grep).
func looksBinary(data []byte) bool {
	head := data[:min(len(data), 8000)]
	for _, b := range head {
		if b == 0 {
			return true
		}
	}
	return false
}

// jsonResult encodes v as indented JSON without HTML escaping, so output
// such as `a < b && c` reads as written.
func jsonResult(v any) Result {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return Errorf("encoding result: %v", err)
	}
	return Result{Content: strings.TrimSuffix(b.String(), "\n")}
}
