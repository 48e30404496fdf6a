package box

import (
	"testing"
)

func TestBoxRunsCommandsInItsOwnNamespaces(t *testing.T) {
	e := startTestBox(t, nil)
	res := e.run(t, "echo hello; hostname; echo $$; pwd; id -u")
	t.Logf("%s", res.Output)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Output)
	}
}
