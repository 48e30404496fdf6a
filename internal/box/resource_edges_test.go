package box

import (
	"strings"
	"testing"
)

func TestTmpFullGivesENOSPCNotOOM(t *testing.T) {
	// /tmp is a tmpfs charged to the box's memory: sized to the disk limit
	// (256 MiB here) it would take the box past its 64 MiB of memory.
	e := startTestBox(t, func(o *Options) { o.Terminal.ContainerMemory = 64; o.Terminal.ContainerDisk = 256 })
	res := e.run(t, "head -c 100m /dev/zero > /tmp/fill; echo rc=$?; df -m /tmp | tail -1")
	if res.OOMKilled {
		t.Fatalf("filling /tmp was an OOM kill: %s", res.Output)
	}
	if !strings.Contains(string(res.Output), "No space left") || strings.Contains(string(res.Output), "rc=0") {
		t.Fatalf("filling /tmp should fail with ENOSPC: %s", res.Output)
	}
	if r := e.run(t, "rm /tmp/fill; echo alive"); trimmed(r) != "alive" {
		t.Fatalf("box did not survive a full /tmp: %s", r.Output)
	}
}

func TestTmpSizeMiB(t *testing.T) {
	for _, tc := range []struct{ disk, mem, want int }{{51200, 5120, 2560}, {64, 256, 64}, {256, 64, 32}, {100, 0, 100}, {0, 1, 1}} {
		tr := testTerminal("")
		tr.ContainerDisk, tr.ContainerMemory = tc.disk, tc.mem
		if got := tmpSizeMiB(tr); got != tc.want {
			t.Errorf("tmpSizeMiB(disk %d, memory %d) = %d, want %d", tc.disk, tc.mem, got, tc.want)
		}
	}
}

func TestEnvPassthroughReachesBoxExceptSecrets(t *testing.T) {
	host := map[string]string{"MY_BUILD_FLAGS": "-tags=box", "GOFLAGS": "-mod=mod", "MY_API_KEY": "sk-passthrough-secret",
		"OPENAI_API_KEY": "sk-provider-secret", "HERMES_HOME": "/secret/home", "PATH": "/host/bin"}
	e := startTestBox(t, func(o *Options) {
		o.Terminal.EnvPassthrough = []string{"MY_BUILD_FLAGS", "GOFLAGS", "MY_API_KEY", "OPENAI_API_KEY", "HERMES_HOME", "PATH", "UNSET_VAR"}
		o.LookupEnv = func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	})
	out := string(e.run(t, "env").Output)
	for _, want := range []string{"MY_BUILD_FLAGS=-tags=box", "GOFLAGS=-mod=mod", "PATH=" + boxPath} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("box environment misses %s:\n%s", want, out)
		}
	}
	for _, bad := range []string{"sk-passthrough-secret", "sk-provider-secret", "/secret/home", "/host/bin", "UNSET_VAR"} {
		if strings.Contains(out, bad) {
			t.Errorf("box environment has %q:\n%s", bad, out)
		}
	}
}
