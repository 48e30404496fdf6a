// Package web fetches pages for the web tools and turns them into
// readable markdown (web_extract), and queries search backends
// (web_search). In box mode pages are fetched from inside the session's
// box, so its egress allowlist and secret placeholders apply as they do to
// curl.
package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// MaxBodyBytes caps a fetched body (10 MiB).
const MaxBodyBytes = 10 << 20

// FetchTimeout bounds one fetch.
const FetchTimeout = 30 * time.Second

// Page is a fetched document.
type Page struct {
	URL         string // final URL after redirects
	Status      int
	ContentType string
	Body        []byte
}

// Fetcher gets a URL for a session.
type Fetcher interface {
	Fetch(ctx context.Context, sessionID, url string) (Page, error)
}

// HTTPFetcher fetches from the host. Unless AllowPrivate is set it refuses
// loopback, private, link-local and other reserved addresses (SSRF guard:
// Hermes security.allow_private_urls), checked on the dialed address so a
// redirect or a DNS answer cannot get around it.
type HTTPFetcher struct {
	AllowPrivate bool
	client       *http.Client
}

// NewHTTPFetcher returns a host fetcher.
func NewHTTPFetcher(allowPrivate bool) *HTTPFetcher {
	f := &HTTPFetcher{AllowPrivate: allowPrivate}
	d := &net.Dialer{Timeout: 10 * time.Second, Control: f.control}
	f.client = &http.Client{
		Timeout:   FetchTimeout,
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: d.DialContext, TLSHandshakeTimeout: 10 * time.Second},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			return nil
		},
	}
	return f
}

func (f *HTTPFetcher) control(_, address string, _ syscall.RawConn) error {
	if f.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if err := CheckPublic(ap.Addr()); err != nil {
		return fmt.Errorf("%w; web_extract reads public pages only (security.allow_private_urls: true allows it)", err)
	}
	return nil
}

// nat64 and nat64Local are the NAT64 prefixes (RFC 6052, RFC 8215), whose
// addresses carry an IPv4 address in their last 32 bits.
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
)

// CheckPublic refuses loopback, private, link-local, multicast,
// unspecified and carrier-grade NAT addresses (IPv4-mapped IPv6 included):
// the SSRF guard of the URL tools (Hermes security.allow_private_urls).
// Callers check the address actually dialed, so DNS answers and redirects
// cannot get around it.
func CheckPublic(addr netip.Addr) error {
	a := addr.Unmap()
	if nat64.Contains(a) || nat64Local.Contains(a) { // 64:ff9b::a.b.c.d reaches the IPv4 address a.b.c.d
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:16]))
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() ||
		a.IsUnspecified() || netip.MustParsePrefix("100.64.0.0/10").Contains(a) {
		return fmt.Errorf("%s is a private or local address", a)
	}
	return nil
}

// Fetch gets url with a bounded body.
func (f *HTTPFetcher) Fetch(ctx context.Context, _ string, url string) (Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Page{}, err
	}
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; hermes web_extract)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/pdf,text/plain;q=0.9,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return Page{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return Page{}, err
	}
	if len(body) > MaxBodyBytes {
		return Page{}, fmt.Errorf("the document is larger than %d MiB", MaxBodyBytes>>20)
	}
	return Page{URL: resp.Request.URL.String(), Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: body}, nil
}

// EnvFetcher fetches with curl inside the session's environment (the box),
// so the request leaves through the box's egress gate.
type EnvFetcher struct {
	Open func(ctx context.Context, sessionID string) (backend.Environment, error)
	// Explain, when set, returns why the box's egress gate refuses url
	// ("hermes egress denied HOST:PORT: ..."), or "": curl reports a
	// refused HTTPS tunnel only as "CONNECT tunnel failed, response 403".
	Explain func(ctx context.Context, env backend.Environment, url string) string
}

// Fetch runs curl in the box, writing the body to a temporary file there.
func (f *EnvFetcher) Fetch(ctx context.Context, sessionID, url string) (Page, error) {
	env, err := f.Open(ctx, sessionID)
	if err != nil {
		return Page{}, err
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	tmp := "/tmp/hermes-web-" + hex.EncodeToString(r[:])
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	cmd := fmt.Sprintf("curl -sS -L --max-redirs 5 --max-time %d --max-filesize %d -A 'Mozilla/5.0 (compatible; hermes web_extract)' -o %s -w '%%{http_code}\\n%%{url_effective}\\n%%{content_type}\\n' -- %s",
		int(FetchTimeout/time.Second), MaxBodyBytes, tmp, q(url))
	res, err := env.Exec(ctx, backend.ExecRequest{Command: cmd, Timeout: FetchTimeout + 5*time.Second})
	if err != nil {
		return Page{}, err
	}
	defer env.Exec(context.WithoutCancel(ctx), backend.ExecRequest{Command: "rm -f " + tmp, Timeout: 5 * time.Second})
	lines := strings.Split(strings.TrimRight(string(res.Output), "\n"), "\n")
	if res.ExitCode != 0 || len(lines) < 3 {
		if f.Explain != nil {
			if why := f.Explain(ctx, env, url); why != "" {
				return Page{}, errors.New(why)
			}
		}
		return Page{}, fmt.Errorf("fetch from the box failed: %s", strings.TrimSpace(string(res.Output)))
	}
	n := len(lines)
	status, _ := strconv.Atoi(lines[n-3])
	// curl's --max-filesize stops only bodies that announce their length;
	// a chunked one streams until the timeout, so check before reading it
	// into memory.
	fi, err := env.Stat(ctx, tmp)
	if err != nil {
		return Page{}, err
	}
	if fi.Size > MaxBodyBytes {
		return Page{}, fmt.Errorf("the document is larger than %d MiB", MaxBodyBytes>>20)
	}
	body, err := env.ReadFile(ctx, tmp)
	if err != nil {
		return Page{}, err
	}
	return Page{URL: lines[n-2], Status: status, ContentType: lines[n-1], Body: body}, nil
}
