package protect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// gitlinkMode is the mode of an index entry recording a submodule commit.
const gitlinkMode = 0o160000

// Gitlinks returns the paths of the gitlinks (mode 160000 entries,
// populated submodules the user's `git status` recurses into) recorded in
// data, a git index file of version 2, 3 or 4 (gitformat-index(5)), whose
// object names are hashLen bytes (20 for SHA-1, 32 for SHA-256).
// Extensions after the entries are not read. A malformed index is an
// error naming the entry.
func Gitlinks(data []byte, hashLen int) ([]string, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, errors.New("not a git index (no DIRC signature)")
	}
	version := binary.BigEndian.Uint32(data[4:])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("git index version %d (hermes reads 2 to 4)", version)
	}
	count := binary.BigEndian.Uint32(data[8:])
	fixed := 40 + hashLen + 2 // stat data, mode, object name, flags
	var out []string
	var prev []byte
	off := 12
	for i := uint32(0); i < count; i++ {
		start := off
		if off+fixed > len(data) {
			return out, fmt.Errorf("git index entry %d runs past the end", i)
		}
		mode := binary.BigEndian.Uint32(data[off+24:])
		flags := binary.BigEndian.Uint16(data[off+40+hashLen:])
		off += fixed
		if flags&0x4000 != 0 { // extended flags (version 3 and later)
			if version < 3 || off+2 > len(data) {
				return out, fmt.Errorf("git index entry %d has bad extended flags", i)
			}
			off += 2
		}
		var name []byte
		if version == 4 {
			strip, n := indexVarint(data[off:])
			if n == 0 || strip > uint64(len(prev)) {
				return out, fmt.Errorf("git index entry %d has a bad name prefix", i)
			}
			off += n
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return out, fmt.Errorf("git index entry %d has an unterminated name", i)
			}
			name = append(append([]byte{}, prev[:len(prev)-int(strip)]...), data[off:off+end]...)
			off += end + 1
		} else {
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return out, fmt.Errorf("git index entry %d has an unterminated name", i)
			}
			name = data[off : off+end]
			off = start + (off-start+end+8)&^7 // NUL padding to a multiple of 8
			if off > len(data) {
				return out, fmt.Errorf("git index entry %d runs past the end", i)
			}
		}
		prev = name
		if mode&0o170000 == gitlinkMode {
			out = append(out, string(name))
		}
	}
	return out, nil
}

// indexVarint decodes the offset encoding of index version 4 (git's
// varint.c): 7 bits a byte, high bit set on all but the last, each
// continuation adding one. It returns the value and the bytes read, 0 on
// a truncated or overlong number.
func indexVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	val := uint64(b[0] & 127)
	for i := 0; b[i]&128 != 0; {
		i++
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		val = (val+1)<<7 | uint64(b[i]&127)
	}
	n := 1
	for b[n-1]&128 != 0 {
		n++
	}
	return val, n
}
