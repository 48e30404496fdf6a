package browser

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/egress"
)

// BoxChromium finds Chromium in the box and points it at the box's egress
// gate: the proxy port, and the box CA trusted by its key hash.
func BoxChromium(ctx context.Context, env backend.Environment) (string, []string, error) {
	path, err := FindInEnv(ctx, env)
	if err != nil {
		return "", nil, err
	}
	ca, err := env.ReadFile(ctx, egress.CACertPath)
	if err != nil {
		return path, nil, nil // no egress gate: the box has no network
	}
	spki, err := SPKIFlag(ca)
	if err != nil {
		return "", nil, fmt.Errorf("%s in the box: %w", egress.CACertPath, err)
	}
	return path, []string{"--proxy-server=http://127.0.0.1:" + strconv.Itoa(egress.ProxyPort), spki}, nil
}

// GateRefusal asks the box's egress gate, from inside the box, whether it
// refuses a tunnel to the host of u, and returns its one-line reason
// ("hermes egress denied HOST:PORT: ...") or "". Chromium reports a refused
// CONNECT only as ERR_TUNNEL_CONNECTION_FAILED.
func GateRefusal(ctx context.Context, env backend.Environment, u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.Hostname() == "" {
		return ""
	}
	port := pu.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
	}
	authority := net.JoinHostPort(pu.Hostname(), port)
	for _, r := range authority {
		if !(r == '.' || r == '-' || r == ':' || r == '[' || r == ']' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return ""
		}
	}
	probe := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' >&3 && timeout 5 head -c 2000 <&3`,
		egress.ProxyPort, authority, authority)
	res, err := env.Exec(ctx, backend.ExecRequest{Command: probe, Timeout: 10 * time.Second})
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(res.Output), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "hermes egress") {
			return line
		}
	}
	return ""
}
