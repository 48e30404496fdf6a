package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/envd/filesystem"
)

// maxFileBytes bounds a file read from the sandbox.
const maxFileBytes = 512 << 20

// env is one task's sandbox (backend.Environment).
type env struct {
	b    *Backend
	task string

	mu       sync.Mutex
	conn     *sandboxConn
	extended time.Time
	procs    map[*proc]struct{}
}

func (e *env) Workdir() string { return Workdir }

// sandbox returns the task's sandbox, creating it on first use, and
// extends its timeout once half of it has passed since the last extension
// (connect only ever extends).
func (e *env) sandbox(ctx context.Context) (*sandboxConn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn == nil {
		c, err := e.b.create(ctx, e.task)
		if err != nil {
			return nil, err
		}
		e.conn, e.extended = c, time.Now()
		return c, nil
	}
	if time.Since(e.extended) > e.b.o.Timeout/2 {
		secs := int(e.b.o.Timeout / time.Second)
		if _, err := e.b.rest(ctx, "POST", "/sandboxes/"+e.conn.id+"/connect", map[string]int{"timeout": secs}, nil); err == nil {
			e.extended = time.Now()
		}
	}
	return e.conn, nil
}

func (e *env) abs(p string) string {
	if !path.IsAbs(p) {
		p = path.Join(Workdir, p)
	}
	return path.Clean(p)
}

// fsErr maps a Connect error onto the fs sentinels.
func fsErr(op, p string, err error) error {
	switch connect.CodeOf(err) {
	case connect.CodeNotFound:
		return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
	case connect.CodePermissionDenied:
		return &fs.PathError{Op: op, Path: p, Err: fs.ErrPermission}
	case connect.CodeAlreadyExists:
		return &fs.PathError{Op: op, Path: p, Err: fs.ErrExist}
	}
	return fmt.Errorf("e2b %s %s: %w", op, p, err)
}

func httpErr(op, p string, resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var ae apiError
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &ae) == nil && ae.Message != "" {
		msg = ae.Message
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		return &fs.PathError{Op: op, Path: p, Err: fmt.Errorf("%s (%w)", msg, fs.ErrNotExist)}
	case http.StatusForbidden:
		return &fs.PathError{Op: op, Path: p, Err: fmt.Errorf("%s (%w)", msg, fs.ErrPermission)}
	}
	return fmt.Errorf("e2b %s %s: HTTP %d: %s", op, p, resp.StatusCode, msg)
}

func (e *env) ReadFile(ctx context.Context, p string) ([]byte, error) {
	c, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	p = e.abs(p)
	req, err := http.NewRequestWithContext(ctx, "GET", c.envdURL+"/files?"+url.Values{"path": {p}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("e2b read %s: %w", p, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, httpErr("read", p, resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxFileBytes+1))
	if err == nil && len(data) > maxFileBytes {
		err = fmt.Errorf("e2b read %s: over %d bytes", p, maxFileBytes)
	}
	return data, err
}

// WriteFile uploads data (envd writes it in place; the E2B protocol has
// no atomic replace, so a reader may see a partial file meanwhile).
func (e *env) WriteFile(ctx context.Context, p string, data []byte, _ fs.FileMode) error {
	c, err := e.sandbox(ctx)
	if err != nil {
		return err
	}
	p = e.abs(p)
	req, err := http.NewRequestWithContext(ctx, "POST", c.envdURL+"/files?"+url.Values{"path": {p}}.Encode(), strings.NewReader(string(data)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("e2b write %s: %w", p, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return httpErr("write", p, resp)
	}
	return nil
}

func fileInfo(en *filesystem.EntryInfo) backend.FileInfo {
	mode := fs.FileMode(en.GetMode()) & fs.ModePerm
	switch en.GetType() {
	case filesystem.FileType_FILE_TYPE_DIRECTORY:
		mode |= fs.ModeDir
	case filesystem.FileType_FILE_TYPE_SYMLINK:
		mode |= fs.ModeSymlink
	}
	return backend.FileInfo{Name: en.GetName(), Size: en.GetSize(), Mode: mode, ModTime: en.GetModifiedTime().AsTime(),
		IsDir: en.GetType() == filesystem.FileType_FILE_TYPE_DIRECTORY}
}

func (e *env) Stat(ctx context.Context, p string) (backend.FileInfo, error) {
	c, err := e.sandbox(ctx)
	if err != nil {
		return backend.FileInfo{}, err
	}
	p = e.abs(p)
	resp, err := c.fs.Stat(ctx, connect.NewRequest(&filesystem.StatRequest{Path: p}))
	if err != nil {
		return backend.FileInfo{}, fsErr("stat", p, err)
	}
	return fileInfo(resp.Msg.GetEntry()), nil
}

func (e *env) ReadDir(ctx context.Context, p string) ([]backend.FileInfo, error) {
	c, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	p = e.abs(p)
	resp, err := c.fs.ListDir(ctx, connect.NewRequest(&filesystem.ListDirRequest{Path: p, Depth: 1}))
	if err != nil {
		return nil, fsErr("list", p, err)
	}
	var out []backend.FileInfo
	for _, en := range resp.Msg.GetEntries() {
		out = append(out, fileInfo(en))
	}
	return out, nil
}

// Close kills the task's processes and its sandbox (or pauses it when
// Persistent; the backend remembers it for the task's next Open).
func (e *env) Close() error {
	e.mu.Lock()
	c := e.conn
	e.conn = nil
	procs := e.procs
	e.procs = map[*proc]struct{}{}
	e.mu.Unlock()
	if c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if e.b.o.Persistent {
		for p := range procs {
			p.Kill()
		}
		_, err := e.b.rest(ctx, "POST", "/sandboxes/"+c.id+"/pause", nil, nil)
		if err == nil {
			e.b.mu.Lock()
			e.b.paused[e.task] = c.id
			e.b.mu.Unlock()
		}
		return err
	}
	code, err := e.b.rest(ctx, "DELETE", "/sandboxes/"+c.id, nil, nil)
	if code == http.StatusNotFound {
		return nil
	}
	return err
}
