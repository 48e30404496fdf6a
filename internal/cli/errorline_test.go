package cli

import (
	"errors"
	"fmt"
	"testing"
)

// An error is printed with the program named once, however it was wrapped
// ("hermes: hermes sandbox serve: listen ..." named it twice).
func TestErrorLineNamesTheProgramOnce(t *testing.T) {
	listen := errors.New("listen tcp 127.0.0.1:8080: bind: address already in use")
	for _, err := range []error{
		fmt.Errorf("hermes sandbox serve: listen on 127.0.0.1:8080: %w", listen),
		fmt.Errorf("hermes: sandbox serve: listen on 127.0.0.1:8080: %w", listen),
		fmt.Errorf("sandbox serve: listen on 127.0.0.1:8080: %w", listen),
	} {
		want := "hermes: sandbox serve: listen on 127.0.0.1:8080: " + listen.Error()
		if got := errorLine(err); got != want {
			t.Errorf("errorLine(%q) = %q, want %q", err, got, want)
		}
	}
	if got := errorLine(errors.New("bad\x1b[2J")); got != `hermes: bad\x1b[2J` {
		t.Errorf("controls: %q", got)
	}
}
