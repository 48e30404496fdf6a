package cli

import (
	"errors"

	"github.com/hermes-go/hermes/internal/session"
)

// redactor is the session runtime's Redactor with CLI error handling.
type redactor struct{ *session.Redactor }

// redactedError keeps an error's identity (errors.Is/As) while its message
// has the secrets removed.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// RedactError returns err with secrets removed from its message (nil stays
// nil). An *ExitError keeps its code; its inner error is redacted.
func (r *redactor) RedactError(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return &ExitError{Code: ee.Code, Silent: ee.Silent, Err: r.RedactError(ee.Err)}
	}
	if msg := r.Redact(err.Error()); msg != err.Error() {
		return &redactedError{err: err, msg: msg}
	}
	return err
}
