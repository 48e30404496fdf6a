// Package selfupdate finds the newest released version of hermes through
// the Go module proxy protocol (https://go.dev/ref/mod#goproxy-protocol)
// and says how to install it: `hermes update`.
//
// GOPROXY is honoured as the go command reads it: a list separated by ","
// (fall through on 404/410) or "|" (fall through on any error); "direct"
// and "off" entries are skipped (no VCS access here); unset means
// https://proxy.golang.org. file:// proxies work (tests, mirrors). Module
// paths are !-escaped (golang.org/x/mod/module.EscapePath).
package selfupdate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// DefaultProxy is used when GOPROXY is unset.
const DefaultProxy = "https://proxy.golang.org"

// maxResponse bounds one proxy response in bytes.
const maxResponse = 4 << 20

// Release is one published version.
type Release struct {
	Version string    // semantic version with the v, e.g. v0.22.0
	Time    time.Time // commit time the proxy reports (zero if unknown)
}

// Finder asks module proxies for versions.
type Finder struct {
	// GOPROXY is the proxy list ("" means DefaultProxy).
	GOPROXY string
	// Client makes http(s) requests (default: 30-second timeout).
	Client *http.Client
}

// errNotFound marks a 404/410 answer, after which a ","-list falls through.
var errNotFound = errors.New("not found")

// ErrRefused is a proxy that answered 401 or 403: it is reachable but does
// not serve the module to this client (a network's rule, the proxy's
// policy, credentials).
var ErrRefused = errors.New("refused")

// Latest returns the newest release of modulePath: the highest semantic
// version in @v/list without a pre-release or +incompatible suffix, else
// @latest's answer. Errors name the proxy and what it answered.
func (f Finder) Latest(ctx context.Context, modulePath string) (Release, error) {
	esc, err := module.EscapePath(modulePath)
	if err != nil {
		return Release{}, fmt.Errorf("module path %q: %w", modulePath, err)
	}
	proxies := parseGOPROXY(f.GOPROXY)
	if len(proxies) == 0 {
		return Release{}, fmt.Errorf("GOPROXY=%q names no proxy to ask (direct and off are not supported here); unset it to use %s", f.GOPROXY, DefaultProxy)
	}
	var errs []error
	for _, p := range proxies {
		rel, err := f.latestFrom(ctx, p.url, esc)
		if err == nil {
			return rel, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.url, err))
		if !p.anyError && !errors.Is(err, errNotFound) {
			break
		}
	}
	return Release{}, fmt.Errorf("finding the newest %s: %w", modulePath, errors.Join(errs...))
}

func (f Finder) latestFrom(ctx context.Context, base, esc string) (Release, error) {
	list, err := f.get(ctx, base+"/"+esc+"/@v/list")
	if err != nil {
		return Release{}, err
	}
	best := ""
	for _, v := range strings.Fields(string(list)) {
		if semver.IsValid(v) && semver.Prerelease(v) == "" && semver.Build(v) == "" && (best == "" || semver.Compare(v, best) > 0) {
			best = v
		}
	}
	infoURL := base + "/" + esc + "/@latest"
	if best != "" {
		v, err := module.EscapeVersion(best)
		if err != nil {
			return Release{}, err
		}
		infoURL = base + "/" + esc + "/@v/" + v + ".info"
	}
	b, err := f.get(ctx, infoURL)
	if err != nil {
		if best != "" {
			return Release{Version: best}, nil // listed; the date is optional
		}
		return Release{}, err
	}
	var info struct {
		Version string
		Time    time.Time
	}
	if err := json.Unmarshal(b, &info); err != nil || !semver.IsValid(info.Version) {
		return Release{}, fmt.Errorf("%s: not a version info: %.80q", infoURL, b)
	}
	return Release{Version: info.Version, Time: info.Time}, nil
}

// get reads an http(s) or file URL, at most maxResponse bytes.
func (f Finder) get(ctx context.Context, raw string) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "file" {
		fh, err := os.Open(filepath.FromSlash(u.Path))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", u.Path, errNotFound)
		}
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		return io.ReadAll(io.LimitReader(fh, maxResponse))
	}
	client := f.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, fmt.Errorf("GET %s: HTTP %d: %w", raw, resp.StatusCode, errNotFound)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("GET %s: HTTP %d: %w", raw, resp.StatusCode, ErrRefused)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: HTTP %d", raw, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxResponse))
}

type proxyEntry struct {
	url      string
	anyError bool // followed by "|": fall through on any error
}

// parseGOPROXY splits GOPROXY into the proxies to ask, in order.
func parseGOPROXY(v string) []proxyEntry {
	v = strings.TrimSpace(v)
	if v == "" {
		v = DefaultProxy
	}
	var out []proxyEntry
	for v != "" {
		i := strings.IndexAny(v, ",|")
		item, sep := v, byte(0)
		if i >= 0 {
			item, sep, v = v[:i], v[i], v[i+1:]
		} else {
			v = ""
		}
		item = strings.TrimSpace(item)
		if item == "" || item == "direct" || item == "off" {
			continue
		}
		out = append(out, proxyEntry{url: strings.TrimSuffix(item, "/"), anyError: sep == '|'})
	}
	return out
}

// Newer reports whether release is newer than current ("0.21.0" or "v0.21.0").
func Newer(release, current string) bool {
	if !strings.HasPrefix(current, "v") {
		current = "v" + current
	}
	if !semver.IsValid(current) {
		return true
	}
	return semver.Compare(release, current) > 0
}
