package config

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Error is a problem with a configuration file or key that a person must
// fix: broken YAML, a wrong type, an unknown key given to Set. It names the
// file (Path, empty when the problem is not tied to a file), the 1-based
// Line (0 when unknown), the dotted Key (empty for syntax errors) and a
// message that says what was expected. It never carries a stack trace or a
// secret value.
type Error struct {
	Path string
	Line int
	Key  string
	Msg  string
}

// Error formats as "PATH:LINE: KEY: MSG", leaving out the parts that are
// empty.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// readError is the error for a file that could not be read: os errors
// already name the operation and the file ("read X: is a directory"), so
// they are returned as they are instead of gaining a second "read X:".
func readError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return err
	}
	return fmt.Errorf("read %s: %w", path, err)
}
