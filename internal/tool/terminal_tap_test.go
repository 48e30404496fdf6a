package tool

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// The tap keeps the exact first and last bytes whatever the write sizes.
func TestOutputTapKeepsHeadAndTail(t *testing.T) {
	full := []byte(seq(300000)) // ~2 MB, well past head+tail
	for _, chunk := range []int{1, 7, 4096, 65537, tapTailMax + 3, len(full)} {
		tap := &outputTap{}
		for p := full; len(p) > 0; {
			k := min(chunk, len(p))
			tap.Write(p[:k])
			p = p[k:]
		}
		if string(tap.head) != string(full[:tapHeadMax]) {
			t.Fatalf("chunk %d: head differs", chunk)
		}
		if string(tap.tailBytes()) != string(full[len(full)-tapTailMax:]) {
			t.Fatalf("chunk %d: tail differs", chunk)
		}
		if tap.total != int64(len(full)) || tap.lines != 300000 {
			t.Fatalf("chunk %d: counted %d bytes %d lines", chunk, tap.total, tap.lines)
		}
	}
}

// Past what is kept in memory, the marker still counts what was left out
// of the whole output, and multibyte characters are counted once.
func TestOutputTapMarkerCountsWholeStream(t *testing.T) {
	line := strings.Repeat("é", 99) + "\n" // 100 characters, 199 bytes
	n := 20000                             // ~4 MB
	tap := &outputTap{}
	for range n {
		tap.Write([]byte(line))
	}
	shown, cut := tap.shown("", nil, "/x/full.log")
	if !cut {
		t.Fatal("not cut")
	}
	i := strings.Index(shown, "\n\n[OUTPUT TRUNCATED")
	j := strings.Index(shown, "]\n\n")
	if i < 0 || j < 0 {
		t.Fatalf("no marker in %q", shown[:200])
	}
	head, tail := shown[:i], shown[j+3:]
	hc, tc := utf8.RuneCountInString(head), utf8.RuneCountInString(tail)
	if hc != MaxOutputChars*40/100 || tc != MaxOutputChars-hc {
		t.Fatalf("shown %d + %d characters", hc, tc)
	}
	wantChars := n*100 - hc - tc
	wantLines := n - strings.Count(head, "\n") - strings.Count(tail, "\n")
	want := fmt.Sprintf("[OUTPUT TRUNCATED: %d characters (%d lines) omitted from the middle; full output saved to /x/full.log", wantChars, wantLines)
	if !strings.Contains(shown[i:j], want) {
		t.Fatalf("marker %q, want %q", shown[i:j], want)
	}
	if !utf8.ValidString(shown) || strings.ContainsRune(shown, utf8.RuneError) {
		t.Fatal("a character was split")
	}
}
