package tool

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// Bytes of a foreground command's output the terminal tool keeps in
// memory: the first tapHeadMax and the last tapTailMax. Everything else
// only goes to the spill file, so memory stays bounded whatever the output
// size. Both are well above what the model sees (MaxOutputChars characters,
// at most 4 bytes each, 40 % head / 60 % tail).
const (
	tapHeadMax = 256 << 10
	tapTailMax = 256 << 10
)

// outputTap receives a foreground command's combined output as it is
// produced: it streams it to the spill file (when there is one), keeps the
// head and a ring of the tail in memory, and counts bytes, characters and
// lines. Safe for concurrent use.
type outputTap struct {
	mu       sync.Mutex
	spill    *spillWriter // nil = no spill file
	spillErr error        // first error writing the spill file; later writes skip it
	head     []byte
	tail     []byte // ring buffer of tapTailMax bytes once full
	start    int    // index of the oldest byte in tail when full
	total    int64
	runes    int64 // bytes that start a UTF-8 sequence (or are invalid)
	lines    int64
}

// Write never fails: a spill file error is remembered and the output
// is still kept for the model.
func (t *outputTap) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spill != nil && t.spillErr == nil {
		_, t.spillErr = t.spill.Write(p)
	}
	t.total += int64(len(p))
	t.lines += int64(bytes.Count(p, []byte{'\n'}))
	for _, b := range p {
		if b&0xC0 != 0x80 {
			t.runes++
		}
	}
	t.keep(p)
	return len(p), nil
}

func (t *outputTap) keep(p []byte) {
	if room := tapHeadMax - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return
	}
	if t.tail == nil {
		t.tail = make([]byte, 0, tapTailMax)
	}
	if room := tapTailMax - len(t.tail); room > 0 {
		k := min(room, len(p))
		t.tail = append(t.tail, p[:k]...)
		p = p[k:]
	}
	if len(p) > tapTailMax {
		p = p[len(p)-tapTailMax:]
	}
	for len(p) > 0 {
		k := copy(t.tail[t.start:], p)
		t.start = (t.start + k) % tapTailMax
		p = p[k:]
	}
}

// dropped reports whether output fell between the kept head and tail.
func (t *outputTap) dropped() bool {
	return t.total > int64(len(t.head)+len(t.tail))
}

// tailBytes returns the kept tail in order.
func (t *outputTap) tailBytes() []byte {
	out := make([]byte, 0, len(t.tail))
	out = append(out, t.tail[t.start:]...)
	return append(out, t.tail[:t.start]...)
}

// shown returns the output for the model and whether it was cut. When the
// whole output was kept it is cleaned and capped as one piece (cleanOutput,
// capOutput). Otherwise the head and tail are cleaned separately and the
// marker counts the characters and lines left out over the whole stream
// (counted on the raw bytes, so escape sequences count as characters).
// The cuts fall far from the ends of the kept pieces, so a secret or
// escape sequence split where the in-memory copy was cut is never shown.
func (t *outputTap) shown(charset string, secrets []string, fullPath string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.dropped() {
		return capOutput(cleanOutput(append(t.head, t.tailBytes()...), charset, secrets), MaxOutputChars, fullPath)
	}
	headText := cleanOutput(t.head, charset, secrets)
	tailText := cleanOutput(t.tailBytes(), charset, secrets)
	headChars := MaxOutputChars * 40 / 100
	tailChars := MaxOutputChars - headChars
	h := headText[:byteOffset(headText, headChars)]
	tl := tailText[byteOffset(tailText, max(0, utf8.RuneCountInString(tailText)-tailChars)):]
	omitted := t.runes - int64(utf8.RuneCountInString(h)+utf8.RuneCountInString(tl))
	omittedLines := t.lines - int64(bytes.Count([]byte(h), []byte{'\n'})+bytes.Count([]byte(tl), []byte{'\n'}))
	return h + truncationMarker(max(omitted, 0), max(omittedLines, 0), fullPath) + tl, true
}
