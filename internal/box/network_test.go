package box

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/egress"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// loopbackResolver resolves upstream.test to 127.0.0.1 (the fake
// upstream) and every other name to 127.0.0.2.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if host == "upstream.test" {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
}

func TestEgressRelayReachesAllowedHostThroughProxy(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl (apt-get install curl)")
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "upstream says hi")
	}))
	defer upstream.Close()
	port := upstream.Listener.Addr().(*net.TCPAddr).Port
	var gate *egress.Gate
	e := startTestBox(t, func(o *Options) {
		g, err := egress.New(egress.Options{Home: o.Home, Allow: []string{"upstream.test", "127.0.0.1/32"}, Resolver: loopbackResolver{}})
		if err != nil {
			t.Fatal(err)
		}
		gate = g
		o.NewEgress = gate.NewBox
	})
	res := e.run(t, fmt.Sprintf("curl -sS --max-time 10 http://upstream.test:%d/; echo; curl -sS --max-time 10 http://denied.test:%d/ || echo DENIED", port, port))
	out := string(res.Output)
	if !strings.Contains(out, "upstream says hi") {
		t.Fatalf("allowed host not reached through the relay: %s", out)
	}
	if strings.Count(out, "upstream says hi") != 1 {
		t.Fatalf("denied host was reached: %s", out)
	}
	ca := e.run(t, "cat /etc/hermes/box-ca.crt | head -1; grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt; echo $HTTPS_PROXY")
	if !strings.Contains(string(ca.Output), "BEGIN CERTIFICATE") || !strings.Contains(string(ca.Output), "127.0.0.1:"+strconv.Itoa(egress.ProxyPort)) {
		t.Fatalf("box CA or proxy env missing: %s", ca.Output)
	}
}

func TestEgressOffRefusesProxyPort(t *testing.T) {
	e := startTestBox(t, nil)
	res := e.run(t, fmt.Sprintf("echo x > /dev/tcp/127.0.0.1/%d && echo CONNECTED", egress.ProxyPort))
	if strings.Contains(string(res.Output), "CONNECTED") {
		t.Fatalf("box without egress reached the proxy port: %s", res.Output)
	}
}

func TestPublishForwardsHostPortToBox(t *testing.T) {
	e := startTestBox(t, nil)
	ctx := context.Background()
	if _, err := e.env.Start(ctx, backendReq("perl -MIO::Socket::INET -e '$s=IO::Socket::INET->new(LocalAddr=>\"127.0.0.1:8765\",Listen=>5,ReuseAddr=>1) or die; print \"ready\\n\"; while($c=$s->accept){print $c \"pong from box\\n\"; close $c}'")); err != nil {
		t.Fatal(err)
	}
	b, err := e.m.Box(ctx, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	addr, err := b.Publish("127.0.0.1:0", 8765)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	deadline := waitfor.Deadline(t)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		got, _ = io.ReadAll(c)
		c.Close()
		if bytes.Contains(got, []byte("pong")) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the server in the box may not listen yet
	}
	if !bytes.Contains(got, []byte("pong from box")) {
		t.Fatalf("published port answered %q", got)
	}
}
