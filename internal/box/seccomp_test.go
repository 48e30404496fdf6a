package box

import "testing"

func TestSeccompFilterAssembles(t *testing.T) {
	f := seccompFilter()
	if err := f.Policy.Validate(); err != nil {
		t.Fatalf("box seccomp policy does not validate: %v", err)
	}
	if _, err := f.Policy.Assemble(); err != nil {
		t.Fatalf("box seccomp policy does not assemble: %v", err)
	}
}
