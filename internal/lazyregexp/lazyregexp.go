// Package lazyregexp compiles a package's regular expressions on first use
// rather than at program start, so a command that never matches them (such
// as `hermes --version`) does not pay for compiling them. The standard
// library keeps the same idea in its internal/lazyregexp.
package lazyregexp

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr the first time it is called
// and returns the same *regexp.Regexp after that. It panics, as
// regexp.MustCompile does, when expr is not a valid expression.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
