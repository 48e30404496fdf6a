// Package workspacefile reads files of a workspace on the host as
// untrusted input. Anything a box or a command wrote there may be a
// symbolic link to the user's keys, a FIFO that never ends, a device, a
// hard link to HERMES_HOME's secrets or a sparse file of a gigabyte; a
// Reader hands out the content of none of them:
//
//   - every name is resolved beneath the workspace root (openat2 with
//     RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS, or Go's os.Root on kernels
//     before 5.6): a symbolic link may point elsewhere inside the
//     workspace, never outside it or into /proc;
//   - the file is stat'ed before it is opened for reading (O_PATH), and
//     only a regular file is opened (O_NONBLOCK, O_NOCTTY), so a FIFO,
//     socket or device is refused without a hang or a side effect;
//   - HERMES_HOME's protected files are refused by device and inode
//     (local.ProtectedFiles), whatever hard link leads to them;
//   - reads are bounded: a file over the caller's limit is refused from
//     its size and never read;
//   - names with control characters are refused.
//
// Each refusal is a *RefusedError whose message is one line naming the
// file and the reason ("AGENTS.md is a symbolic link to a path outside
// the workspace").
package workspacefile

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// ErrRefused is wrapped by every *RefusedError (errors.Is).
var ErrRefused = errors.New("refused workspace file")

// Kind classifies a refusal.
type Kind int

// Refusal kinds.
const (
	LinkOut   Kind = iota + 1 // a symbolic link (or a path) leading out of the root, or into /proc
	Protected                 // one of HERMES_HOME's protected files (device and inode)
	NotFile                   // a directory where a file was asked for, or the reverse
	Special                   // a FIFO, socket or device
	TooLarge                  // over the caller's size limit
	BadName                   // control characters in the name
	Replaced                  // swapped for another file between the check and the read
)

// RefusedError is a workspace file the Reader will not read.
type RefusedError struct {
	Kind Kind
	// Name is the file as asked for, relative to the workspace root.
	Name string
	// Reason completes the sentence "<Name> <Reason>", e.g. "is a
	// symbolic link to a path outside the workspace".
	Reason string
}

func (e *RefusedError) Error() string { return DisplayName(e.Name) + " " + e.Reason }

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Refusal reasons.
const (
	reasonLinkOut    = "is a symbolic link to a path outside the workspace"
	reasonPathOut    = "is reached through a symbolic link to a path outside the workspace"
	reasonMagicLink  = "is reached through a /proc link or too many symbolic links"
	reasonProtected  = "is one of hermes' protected files in HERMES_HOME (API keys, secrets, session data), reached through a link"
	reasonControl    = "has a control character in its name"
	reasonDirectory  = "is a directory, not a file"
	reasonNotDir     = "is not a directory"
	reasonFIFO       = "is a named pipe (FIFO), not a regular file"
	reasonSocket     = "is a socket, not a regular file"
	reasonDevice     = "is a device, not a regular file"
	reasonOther      = "is not a regular file"
	reasonAbsoluteOf = "is not inside the workspace"
)

// DisplayName returns name as it can be printed on one terminal line:
// quoted (Go syntax) when it holds a control or non-printable character.
func DisplayName(name string) string {
	if HasControl(name) {
		return strconv.Quote(name)
	}
	return name
}

// HasControl reports whether name holds a control character (C0, DEL or
// C1) or is not valid UTF-8 printable text.
func HasControl(name string) bool {
	for _, r := range name {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return true
		}
	}
	return false
}

// tooLarge is the refusal of a file over limit bytes.
func tooLarge(name string, size, limit int64) *RefusedError {
	return &RefusedError{Kind: TooLarge, Name: name, Reason: fmt.Sprintf("is %d bytes, over the %d-byte limit", size, limit)}
}

// relName turns name (relative to root, or absolute and inside root) into
// a clean relative path; "." is the root itself.
func relName(root, name string) (string, error) {
	if HasControl(name) {
		return "", &RefusedError{Kind: BadName, Name: name, Reason: reasonControl}
	}
	if filepath.IsAbs(name) {
		rel, err := filepath.Rel(root, filepath.Clean(name))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", &RefusedError{Kind: LinkOut, Name: name, Reason: reasonAbsoluteOf}
		}
		return rel, nil
	}
	clean := filepath.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", &RefusedError{Kind: LinkOut, Name: name, Reason: reasonAbsoluteOf}
	}
	return clean, nil
}

// typeReason returns why a file of mode m cannot be read as a file, or "".
func typeReason(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return reasonDirectory
	case m&fs.ModeNamedPipe != 0:
		return reasonFIFO
	case m&fs.ModeSocket != 0:
		return reasonSocket
	case m&fs.ModeDevice != 0:
		return reasonDevice
	}
	return reasonOther
}

// sortEntries sorts directory entries by name.
func sortEntries(es []fs.DirEntry) {
	slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

// refuseType is the refusal of a file of mode m where a regular file was
// asked for, or nil.
func refuseType(name string, m fs.FileMode) error {
	why := typeReason(m)
	switch {
	case why == "":
		return nil
	case m.IsDir():
		return &RefusedError{Kind: NotFile, Name: name, Reason: why}
	}
	return &RefusedError{Kind: Special, Name: name, Reason: why}
}
