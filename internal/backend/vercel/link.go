package vercel

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/lazyregexp"
)

// ProjectLink is what `vercel link` writes to .vercel/project.json:
// {"projectId": "prj_…", "orgId": "team_…"}.
type ProjectLink struct {
	ProjectID string `json:"projectId"`
	OrgID     string `json:"orgId"`
	// Path is the project.json read.
	Path string `json:"-"`
}

// maxProjectFile bounds .vercel/project.json (it is a few dozen bytes).
const maxProjectFile = 64 << 10

// vercelID matches a Vercel project or team id.
var vercelID = lazyregexp.New(`^[A-Za-z0-9_-]{1,128}$`)

// FindProjectLink reads the nearest .vercel/project.json at dir or above
// it, as the Vercel CLI and Hermes's setup do. found is false when no
// directory up to the root is linked. The file is a regular file read with
// a size bound; ids that are not Vercel ids are an error naming the file.
func FindProjectLink(dir string) (link ProjectLink, found bool, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return ProjectLink{}, false, err
	}
	for {
		p := filepath.Join(dir, ".vercel", "project.json")
		st, err := os.Lstat(p)
		if err == nil {
			if !st.Mode().IsRegular() {
				return ProjectLink{}, false, fmt.Errorf("%s is not a regular file", p)
			}
			link, err := readProjectLink(p)
			return link, err == nil, err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ProjectLink{}, false, nil
		}
		dir = parent
	}
}

func readProjectLink(p string) (ProjectLink, error) {
	f, err := os.Open(p)
	if err != nil {
		return ProjectLink{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProjectFile+1))
	if err != nil {
		return ProjectLink{}, err
	}
	if len(b) > maxProjectFile {
		return ProjectLink{}, fmt.Errorf("%s: larger than %d bytes", p, maxProjectFile)
	}
	var link ProjectLink
	if err := json.Unmarshal(b, &link); err != nil {
		return ProjectLink{}, fmt.Errorf("%s: %w (run `vercel link` again)", p, err)
	}
	for _, id := range []struct{ key, v string }{{"projectId", link.ProjectID}, {"orgId", link.OrgID}} {
		if !vercelID().MatchString(id.v) {
			return ProjectLink{}, fmt.Errorf("%s: %s %.40q is not a Vercel id (run `vercel link` again)", p, id.key, id.v)
		}
	}
	link.Path = p
	return link, nil
}

// OIDCExpiry returns the expiry (the "exp" claim, seconds since the epoch)
// of a Vercel OIDC token, a JWT. The payload is decoded (base64url, padded
// or not) but the signature is not verified: this is for reporting only.
func OIDCExpiry(token string) (time.Time, error) {
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return time.Time{}, errors.New("not a JWT (want three dot-separated parts)")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, fmt.Errorf("JWT payload is not base64url: %w", err)
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		return time.Time{}, fmt.Errorf("JWT payload is not JSON: %w", err)
	}
	if claims.Exp == nil {
		return time.Time{}, errors.New("JWT has no exp claim")
	}
	secs, err := claims.Exp.Float64()
	if err != nil || secs <= 0 {
		return time.Time{}, fmt.Errorf("JWT exp %q is not a time", claims.Exp.String())
	}
	return time.Unix(int64(secs), 0).UTC(), nil
}
