package box

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/backend"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// pinSocketsPerl opens up to 400 loopback TCP connections in the box,
// never reads them, writes to each until the kernel refuses more, prints
// the bytes written, and holds the connections open.
const pinSocketsPerl = `use IO::Socket::INET;
my $l = IO::Socket::INET->new(Listen => 1024, LocalAddr => "127.0.0.1", LocalPort => 0, ReuseAddr => 1) or die "listen: $!";
my ($total, @keep) = (0);
my $buf = "x" x 65536;
for (1..400) {
	my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $l->sockport) or last;
	my $s = $l->accept or last;
	$c->blocking(0);
	while (1) { my $n = syswrite($c, $buf); last unless defined $n && $n > 0; $total += $n; }
	push @keep, $c, $s;
}
$| = 1;
print "$total\n";
sleep 600;
`

// TestLimitSocketBuffersCharged: TCP socket buffers the box pins count
// against its memory (v1 left them unaccounted: 1.2 GiB pinned under a
// 256 MiB limit).
func TestLimitSocketBuffersCharged(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	const limitMiB = 64
	e := startTestBox(t, func(o *Options) { o.Terminal.ContainerMemory = limitMiB })
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	script := filepath.Join(e.workspace, "pin.pl")
	if err := os.WriteFile(script, []byte(pinSocketsPerl), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	p, err := e.env.Start(ctx, backend.ExecRequest{Command: "perl pin.pl", Output: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	written, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Fatalf("perl printed %q", line)
	}
	b, _ := e.m.Box(ctx, "test-task")
	st, err := b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pinned %d MiB in socket buffers; charged %d MiB", written>>20, st.SocketBytes>>20)
	if st.SocketBytes < 1<<20 {
		t.Fatalf("%d MiB sit in the box's socket buffers but only %d bytes are charged to it", written>>20, st.SocketBytes)
	}
	// The kernel lets each socket keep a minimum of a few pages under
	// memory pressure, so 400 sockets overshoot the limit by up to about
	// 20 MiB (without the limit they pinned 1.5 GiB here).
	const bound = 2 * limitMiB << 20
	if written > bound {
		t.Fatalf("the box pinned %d MiB in socket buffers with a %d MiB memory limit", written>>20, limitMiB)
	}
	for _, d := range b.cg.Dirs() { // cgroup v1: the memory controller's directory has the peak
		raw, err := os.ReadFile(filepath.Join(d, "memory.kmem.tcp.max_usage_in_bytes"))
		if err != nil {
			continue
		}
		if peak, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64); peak > bound {
			t.Fatalf("socket buffers peaked at %d MiB with a %d MiB limit", peak>>20, limitMiB)
		}
	}
}
