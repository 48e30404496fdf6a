package procident

import (
	"os/exec"
	"testing"
)

// A process is alive while it runs and not after it exits; a pid with
// another start time (a reused pid) is not the same process.
func TestAliveTellsAReusedPid(t *testing.T) {
	self, err := Self()
	if err != nil || !self.Alive() {
		t.Fatalf("this process is not alive: %+v %v", self, err)
	}
	if (Process{PID: self.PID, StartTime: self.StartTime + 1}).Alive() {
		t.Error("a pid with another start time counts as the same process")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, _, err := StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := Process{PID: cmd.Process.Pid, StartTime: start}
	if !p.Alive() {
		t.Fatal("a running child is not alive")
	}
	_ = cmd.Process.Kill()
	// Until it is reaped the child is a zombie, which does not count.
	if !p.WaitExit(1 << 62) {
		t.Error("WaitExit returned before the child ended")
	}
	_ = cmd.Wait()
}
