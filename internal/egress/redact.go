package egress

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"html"
	"io"
	"slices"
	"sort"
	"unicode/utf8"
)

// fragmentLen is the shortest run of a secret's characters that is
// redacted on its own: any fragment of a secret of at least this many
// characters (a partial echo, a Range slice, a split) is replaced, so at
// most fragmentLen-1 contiguous characters of a secret can be read back per
// echo. Secrets shorter than this are matched whole.
const fragmentLen = 8

// minEncodedSecret is the shortest secret value whose base64 and hex
// encodings are redacted too (shorter ones would redact unrelated text).
const minEncodedSecret = 6

// minBase64Core is the shortest base64 run that is redacted when a secret
// lies inside a larger base64 string (see base64Core).
const minBase64Core = 8

// filterBits sizes the bit filter that screens 8-byte windows before the
// fragment map is consulted.
const filterBits = 16

// redactor finds the secret values of one box in response bytes and
// replaces them by their placeholders. Matching runs on a normalised view
// of the bytes: ASCII case folded, NUL bytes skipped (ASCII text in UTF-16LE
// or UTF-16BE), line breaks skipped (raw, %0A or \n: wrapped base64), and one level of percent-encoding (either case), JSON/JS
// string escapes (\/, \uXXXX, \xHH, \", \\) and HTML character references
// (&#43; &#x2F; &sol; ...) decoded. A match replaces the original bytes it
// came from. Matched are: any fragment of at least fragmentLen characters
// of a secret (the whole value of a shorter secret), and for values of at
// least minEncodedSecret bytes their base64 (both alphabets, padded or not,
// also inside a larger base64 string) and hex encodings.
type redactor struct {
	secrets []foldedSecret
	grams   map[uint64][]gramRef
	filter  []uint64 // 1<<filterBits bits over the hashed 4-byte windows of the grams
	exact   []replacement
}

type foldedSecret struct {
	value       []byte // ASCII-folded
	placeholder string
}

// gramRef locates one fragmentLen-byte window of a folded secret.
type gramRef struct{ secret, off int }

func newRedactor(secrets []*boxSecret) *redactor {
	r := &redactor{grams: map[uint64][]gramRef{}, filter: make([]uint64, 1<<filterBits/64)}
	seen := map[string]bool{}
	addExact := func(old, new string) {
		old = string(foldASCII([]byte(old)))
		if old != "" && !seen[old] {
			seen[old] = true
			r.exact = append(r.exact, replacement{old: old, new: new})
		}
	}
	for _, s := range secrets {
		v := foldASCII([]byte(s.value))
		v = slices.DeleteFunc(v, func(c byte) bool { return c == 0 || c == '\r' || c == '\n' }) // not in the normalised view
		if len(v) < fragmentLen {
			addExact(s.value, s.placeholder)
		} else {
			idx := len(r.secrets)
			r.secrets = append(r.secrets, foldedSecret{value: v, placeholder: s.placeholder})
			for k := 0; k+fragmentLen <= len(v); k++ {
				key := binary.LittleEndian.Uint64(v[k:])
				r.grams[key] = append(r.grams[key], gramRef{idx, k})
			}
			for k := 0; k+4 <= len(v); k++ {
				h := quadHash(binary.LittleEndian.Uint32(v[k:]))
				r.filter[h>>6] |= 1 << (h & 63)
			}
		}
		if len(s.value) < minEncodedSecret {
			continue
		}
		value, ph := []byte(s.value), []byte(s.placeholder)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			addExact(enc.EncodeToString(value), enc.EncodeToString(ph))
		}
		addExact(hex.EncodeToString(value), hex.EncodeToString(ph))
		for shift := range 3 {
			core, phCore := base64Core(value, shift), base64Core(ph, shift)
			if len(core) < minBase64Core {
				continue
			}
			addExact(core, phCore)
			addExact(toURLAlphabet(core), toURLAlphabet(phCore))
		}
	}
	return r
}

func quadHash(key uint32) uint32 { return (key * 0x9E3779B1) >> (32 - filterBits) }

// String redacts s completely (headers, error text, audit fields).
func (r *redactor) String(s string) string {
	if r == nil || len(r.secrets)+len(r.exact) == 0 {
		return s
	}
	var n normalized
	out, _ := r.redact(&n, []byte(s), true, nil)
	return string(out)
}

// redact appends the redacted form of in[:consumed] to out. Unless final
// it keeps back a tail of in that could still become (part of) a match with
// the next bytes: an unfinished escape, a match reaching the end, or a
// suffix that could start one.
func (r *redactor) redact(n *normalized, in []byte, final bool, out []byte) ([]byte, int) {
	n.run(in, final)
	pos, i := 0, 0
	for {
		j, m, repl, open := r.next(n.b, i)
		if j < 0 {
			break
		}
		start, _ := n.src(j)
		if open && !final {
			return append(out, in[pos:start]...), start
		}
		out = append(out, in[pos:start]...)
		out = append(out, repl...)
		_, end := n.src(j + m - 1)
		pos, i = end, j+m
	}
	hold := len(in)
	if !final {
		hold = n.incomplete
		if t := r.pendingTail(n.b[i:]); t > 0 {
			from, _ := n.src(len(n.b) - t)
			hold = min(hold, from)
		}
	}
	return append(out, in[pos:hold]...), hold
}

// next finds the leftmost (then longest) match in norm at or after i. open
// reports a fragment match that reaches the end of norm and could go on.
func (r *redactor) next(norm []byte, i int) (j, m int, repl string, open bool) {
	j = -1
	for _, rep := range r.exact {
		k := bytes.Index(norm[i:], []byte(rep.old))
		if k < 0 {
			continue
		}
		k += i
		if j < 0 || k < j || k == j && len(rep.old) > m {
			j, m, repl = k, len(rep.old), rep.new
		}
	}
	end := len(norm) - fragmentLen
	if j >= 0 {
		end = min(end, j)
	}
	// A fragment starting at q holds the 4-byte window at the one p in
	// [q, q+3] on this stride, so windows are screened every 4 bytes and
	// only a hit is looked at closely (starts p-4..p, leftmost first).
	for p := i; p <= end+3 && p+4 <= len(norm); p += 4 {
		h := quadHash(binary.LittleEndian.Uint32(norm[p:]))
		if r.filter[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for q := max(i, p-4); q <= min(p, end); q++ {
			m2, repl2, open2 := r.fragmentAt(norm, q)
			if m2 == 0 {
				continue
			}
			if q == j && m >= m2 {
				return j, m, repl, false
			}
			return q, m2, repl2, open2
		}
	}
	return j, m, repl, false
}

// fragmentAt is the longest fragment of a secret starting at norm[q]
// (0 when none of fragmentLen bytes does).
func (r *redactor) fragmentAt(norm []byte, q int) (m int, repl string, open bool) {
	for _, g := range r.grams[binary.LittleEndian.Uint64(norm[q:])] {
		s := r.secrets[g.secret].value
		l := fragmentLen
		for q+l < len(norm) && g.off+l < len(s) && norm[q+l] == s[g.off+l] {
			l++
		}
		if l > m {
			m, repl, open = l, r.secrets[g.secret].placeholder, q+l == len(norm) && g.off+l < len(s)
		}
	}
	return m, repl, open
}

// pendingTail is the length of the longest suffix of norm that could be
// the start of a match: a proper prefix of an encoded form, or fewer than
// fragmentLen characters found in a secret.
func (r *redactor) pendingTail(norm []byte) int {
	tail := 0
	for _, rep := range r.exact {
		for k := min(len(rep.old)-1, len(norm)); k > tail; k-- {
			if bytes.HasSuffix(norm, []byte(rep.old[:k])) {
				tail = k
				break
			}
		}
	}
	for _, s := range r.secrets {
		for k := min(fragmentLen-1, len(norm)); k > tail; k-- {
			if bytes.Contains(s.value, norm[len(norm)-k:]) {
				tail = k
				break
			}
		}
	}
	return tail
}

// normalized is the matching view of a byte slice. Bytes map one to one
// (case folded) except where an edit says otherwise: edit e turned the
// original bytes [e.from, e.to) into b[e.norm:e.normEnd] (a decoded escape,
// or nothing for a NUL byte). incomplete is where an escape that the next
// bytes could finish starts (len of the input when there is none).
type normalized struct {
	b          []byte
	edits      []edit
	incomplete int
}

type edit struct{ norm, normEnd, from, to int }

// specialBytes start something other than a one-to-one byte. NUL, CR and
// LF are skipped: NUL for UTF-16 text, line breaks because encoders wrap
// base64 (MIME and PEM at 76 or 64 columns, GitHub's blob and contents
// APIs at 60) and a break inside an encoded secret must not hide it.
const specialBytes = "\x00%\\&\r\n"

// emit appends c (already folded), decoded from the original [from, to).
func (n *normalized) emit(c byte, from, to int) {
	k := len(n.edits) - 1
	if k >= 0 && n.edits[k].from == from && n.edits[k].normEnd == len(n.b) {
		n.edits[k].normEnd++ // another byte of the same escape (UTF-8 of \uXXXX)
	} else {
		n.edits = append(n.edits, edit{norm: len(n.b), normEnd: len(n.b) + 1, from: from, to: to})
	}
	n.b = append(n.b, c)
}

// src is the original range b[j] came from.
func (n *normalized) src(j int) (from, to int) {
	i := sort.Search(len(n.edits), func(i int) bool { return n.edits[i].norm > j }) - 1
	if i < 0 {
		return j, j + 1
	}
	e := n.edits[i]
	if j < e.normEnd {
		return e.from, e.to
	}
	from = e.to + j - e.normEnd
	return from, from + 1
}

func (n *normalized) run(in []byte, final bool) {
	n.b, n.edits, n.incomplete = n.b[:0], n.edits[:0], len(in)
	next := [len(specialBytes)]int{-1, -1, -1, -1, -1, -1} // next position of each special byte
	for p := 0; p < len(in); {
		start := p
		p = len(in)
		for k := range len(specialBytes) {
			c := specialBytes[k]
			if next[k] < start {
				next[k] = len(in)
				if i := bytes.IndexByte(in[start:], c); i >= 0 {
					next[k] = start + i
				}
			}
			p = min(p, next[k])
		}
		if p > start {
			k := len(n.b)
			n.b = append(n.b, in[start:p]...)
			foldInPlace(n.b[k:])
		}
		if p == len(in) {
			break
		}
		var span int
		switch in[p] {
		case 0, '\r', '\n':
			n.edits = append(n.edits, edit{norm: len(n.b), normEnd: len(n.b), from: p, to: p + 1})
			p++
			continue
		case '%':
			span = n.percent(in, p)
		case '\\':
			span = n.backslash(in, p)
		case '&':
			span = n.entity(in, p)
		}
		if span < 0 { // may complete with more bytes
			if !final {
				n.incomplete = p
				return
			}
			span = 0
		}
		if span == 0 { // not an escape: the byte stands for itself
			n.b = append(n.b, in[p])
			span = 1
		}
		p += span
	}
}

// percent decodes %HH at in[p]; 0 when it is not one, -1 when cut short.
func (n *normalized) percent(in []byte, p int) int {
	if p+2 >= len(in) {
		if p+3 > len(in) && allHex(in[p+1:]) {
			return -1
		}
		return 0
	}
	v, ok := hexByte(in[p+1], in[p+2])
	if !ok {
		return 0
	}
	if v == 0 || v == '\r' || v == '\n' { // skipped, as the raw byte is
		n.edits = append(n.edits, edit{norm: len(n.b), normEnd: len(n.b), from: p, to: p + 3})
		return 3
	}
	n.emit(lowerASCII(v), p, p+3)
	return 3
}

// backslash decodes a JSON/JS escape at in[p].
func (n *normalized) backslash(in []byte, p int) int {
	if p+1 >= len(in) {
		return -1
	}
	switch e := in[p+1]; e {
	case '/', '\\', '"', '\'':
		n.emit(e, p, p+2)
		return 2
	case 'n', 'r': // a line break, skipped as a raw one is
		n.edits = append(n.edits, edit{norm: len(n.b), normEnd: len(n.b), from: p, to: p + 2})
		return 2
	case 'x':
		if p+4 > len(in) {
			if allHex(in[p+2:]) {
				return -1
			}
			return 0
		}
		v, ok := hexByte(in[p+2], in[p+3])
		if !ok {
			return 0
		}
		n.emit(lowerASCII(v), p, p+4)
		return 4
	case 'u':
		if p+6 > len(in) {
			if allHex(in[p+2:]) {
				return -1
			}
			return 0
		}
		hi, ok1 := hexByte(in[p+2], in[p+3])
		lo, ok2 := hexByte(in[p+4], in[p+5])
		if !ok1 || !ok2 {
			return 0
		}
		r := rune(hi)<<8 | rune(lo)
		var buf [utf8.UTFMax]byte
		for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
			n.emit(lowerASCII(c), p, p+6)
		}
		return 6
	}
	return 0
}

// maxEntity bounds an HTML character reference (&...;) looked at.
const maxEntity = 12

// entity decodes an HTML character reference at in[p] (numeric ones may
// lack the closing semicolon, as browsers accept).
func (n *normalized) entity(in []byte, p int) int {
	end := min(len(in), p+maxEntity)
	q := bytes.IndexByte(in[p+1:end], ';')
	if q < 0 {
		if end == len(in) && len(in)-p < maxEntity && entityChars(in[p+1:]) {
			return -1
		}
		if p+2 < len(in) && in[p+1] == '#' { // &#43 or &#x2f without ';'
			k := p + 2
			hexRef := in[k] == 'x' || in[k] == 'X'
			if hexRef {
				k++
			}
			digits := k
			for k < len(in) && k < p+maxEntity && (isHex(in[k]) && hexRef || in[k] >= '0' && in[k] <= '9') {
				k++
			}
			if k == digits {
				return 0
			}
			return n.emitEntity(in[p:k], p, k)
		}
		return 0
	}
	return n.emitEntity(in[p:p+2+q], p, p+2+q)
}

func (n *normalized) emitEntity(ref []byte, from, to int) int {
	dec := html.UnescapeString(string(ref))
	if dec == string(ref) || dec == "" {
		return 0
	}
	for i := 0; i < len(dec); i++ {
		n.emit(lowerASCII(dec[i]), from, to)
	}
	return to - from
}

func entityChars(b []byte) bool {
	for _, c := range b {
		if !(c == '#' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func allHex(b []byte) bool {
	for _, c := range b {
		if !isHex(c) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hexByte(a, b byte) (byte, bool) {
	if !isHex(a) || !isHex(b) {
		return 0, false
	}
	return unhex(a)<<4 | unhex(b), true
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// foldInPlace lower-cases the ASCII letters of b, eight bytes at a time:
// a byte gets 0x20 when its low seven bits are in 'A'..'Z' and its high
// bit is clear.
func foldInPlace(b []byte) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		h := x & 0x7f7f7f7f7f7f7f7f
		upper := (h + 0x3f3f3f3f3f3f3f3f) &^ (h + 0x2525252525252525) &^ x & 0x8080808080808080
		binary.LittleEndian.PutUint64(b[i:], x|upper>>2)
	}
	for ; i < len(b); i++ {
		b[i] = lowerASCII(b[i])
	}
}

func foldASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = lowerASCII(c)
	}
	return out
}

// redactingReader streams src through a redactor; it holds back only a
// tail that could still be (the start of) a secret, so a streamed response
// (SSE) is delayed only while it looks like one.
type redactingReader struct {
	src    io.Reader
	r      *redactor
	n      normalized
	in     []byte
	out    []byte
	pend   []byte
	buf    []byte
	srcErr error
}

func newRedactingReader(src io.Reader, r *redactor) *redactingReader {
	return &redactingReader{src: src, r: r, buf: make([]byte, 32<<10)}
}

func (r *redactingReader) Read(p []byte) (int, error) {
	for len(r.pend) == 0 {
		if r.srcErr != nil && len(r.in) == 0 {
			return 0, r.srcErr
		}
		if r.srcErr == nil {
			n, err := r.src.Read(r.buf)
			r.in = append(r.in, r.buf[:n]...)
			r.srcErr = err
			if n == 0 && err == nil {
				continue
			}
		}
		var used int
		r.out, used = r.r.redact(&r.n, r.in, r.srcErr != nil, r.out[:0])
		r.in = append(r.in[:0], r.in[used:]...)
		r.pend = r.out
	}
	n := copy(p, r.pend)
	r.pend = r.pend[n:]
	return n, nil
}

func (r *redactingReader) Close() error {
	if c, ok := r.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
