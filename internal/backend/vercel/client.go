package vercel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The REST shapes below follow @vercel/sandbox 3.5.0
// (dist/api-client/api-client.js and validators.js, Apache-2.0): the
// field and path names are the SDK's.

// session is a running sandbox session (validators.js Session).
type session struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Cwd     string `json:"cwd"`
	Timeout int64  `json:"timeout"` // ms
	Memory  int    `json:"memory"`
	VCPUs   int    `json:"vcpus"`
	Runtime string `json:"runtime,omitempty"`
}

// command is a command record (validators.js Command).
type command struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Args     []string
	Cwd      string `json:"cwd"`
	ExitCode *int   `json:"exitCode"`
}

// apiError is an error answer: {"error": {"message", "code"}}.
type apiError struct {
	Status  int
	Message string
	Code    string
}

func (e *apiError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("Vercel Sandbox API: HTTP %d", e.Status)
	}
	return fmt.Sprintf("Vercel Sandbox API: %s (HTTP %d)", e.Message, e.Status)
}

// client calls the Vercel Sandbox API.
type client struct {
	base    string // e.g. https://vercel.com/api
	token   string
	teamID  string
	http    *http.Client
	retries int
}

// do sends a JSON request (body nil = none) and decodes a JSON answer into
// out (nil = ignore). 429 and 5xx are retried up to c.retries times with
// backoff, as the SDK does.
func (c *client) do(ctx context.Context, method, path string, query url.Values, body any, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	resp, err := c.send(ctx, method, path, query, "application/json", nil, payload)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
		return fmt.Errorf("vercel_sandbox: API %s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}

// send performs a request with retries and returns a 2xx response (the
// caller closes its body), or an *apiError.
func (c *client) send(ctx context.Context, method, path string, query url.Values, contentType string, headers http.Header, payload []byte) (*http.Response, error) {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	if c.teamID != "" {
		q.Set("teamId", c.teamID)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	delay := 500 * time.Millisecond
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(payload))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("User-Agent", "hermes-go (vercel_sandbox backend)")
		for k, v := range headers {
			req.Header[k] = v
		}
		resp, err := c.http.Do(req)
		if err != nil {
			if ctx.Err() != nil || attempt >= c.retries {
				return nil, fmt.Errorf("vercel_sandbox: API %s %s: %w", method, path, err)
			}
		} else if resp.StatusCode < 300 {
			return resp, nil
		} else {
			aerr := readError(resp)
			if (resp.StatusCode != 429 && resp.StatusCode < 500) || attempt >= c.retries {
				return nil, aerr
			}
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				delay = min(time.Duration(s)*time.Second, 30*time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay *= 2
	}
}

func readError(resp *http.Response) *apiError {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &body)
	return &apiError{Status: resp.StatusCode, Message: body.Error.Message, Code: body.Error.Code}
}

// createRequest is POST /v2/sandboxes.
type createRequest struct {
	ProjectID string         `json:"projectId,omitempty"`
	Runtime   string         `json:"runtime,omitempty"`
	Timeout   int64          `json:"timeout,omitempty"` // ms
	Resources *resources     `json:"resources,omitempty"`
	Source    *snapshotSrc   `json:"source,omitempty"`
	Env       map[string]any `json:"env,omitempty"`
}

type resources struct {
	VCPUs int `json:"vcpus"`
}

type snapshotSrc struct {
	Type       string `json:"type"` // "snapshot"
	SnapshotID string `json:"snapshotId"`
}

func (c *client) create(ctx context.Context, r createRequest) (session, error) {
	var out struct {
		Session session `json:"session"`
	}
	if err := c.do(ctx, http.MethodPost, "/v2/sandboxes", nil, r, &out); err != nil {
		return session{}, err
	}
	if out.Session.ID == "" {
		return session{}, errors.New("vercel_sandbox: API: create answered without a session id")
	}
	return out.Session, nil
}

func (c *client) stop(ctx context.Context, sid string) error {
	return c.do(ctx, http.MethodPost, "/v2/sandboxes/sessions/"+url.PathEscape(sid)+"/stop", nil, nil, nil)
}

func (c *client) extend(ctx context.Context, sid string, d time.Duration) error {
	return c.do(ctx, http.MethodPost, "/v2/sandboxes/sessions/"+url.PathEscape(sid)+"/extend-timeout", nil,
		map[string]int64{"duration": d.Milliseconds()}, nil)
}

// snapshot snapshots the session's filesystem (which stops the session)
// and returns the snapshot id.
func (c *client) snapshot(ctx context.Context, sid string) (string, error) {
	var out struct {
		Snapshot struct {
			ID string `json:"id"`
		} `json:"snapshot"`
	}
	if err := c.do(ctx, http.MethodPost, "/v2/sandboxes/sessions/"+url.PathEscape(sid)+"/snapshot", nil, nil, &out); err != nil {
		return "", err
	}
	return out.Snapshot.ID, nil
}

// cmdRequest is POST /v2/sandboxes/sessions/{id}/cmd.
type cmdRequest struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Wait    bool              `json:"wait,omitempty"`
}

// startCmd starts a command; with wait the answer is an ndjson stream
// (command record, log lines, finished record) left open for the caller.
func (c *client) startCmd(ctx context.Context, sid string, r cmdRequest) (command, *bufio.Reader, io.Closer, error) {
	payload, err := json.Marshal(r)
	if err != nil {
		return command{}, nil, nil, err
	}
	resp, err := c.send(ctx, http.MethodPost, "/v2/sandboxes/sessions/"+url.PathEscape(sid)+"/cmd", nil, "application/json", nil, payload)
	if err != nil {
		return command{}, nil, nil, err
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var first struct {
		Command command `json:"command"`
	}
	line, err := br.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		resp.Body.Close()
		return command{}, nil, nil, fmt.Errorf("vercel_sandbox: API: command stream ended early: %w", err)
	}
	if err := json.Unmarshal(line, &first); err != nil || first.Command.ID == "" {
		resp.Body.Close()
		return command{}, nil, nil, fmt.Errorf("vercel_sandbox: API: unexpected command answer %q", bytes.TrimSpace(line))
	}
	return first.Command, br, resp.Body, nil
}

func (c *client) kill(ctx context.Context, sid, cmdID string, signal int) error {
	return c.do(ctx, http.MethodPost, "/v2/sandboxes/sessions/"+url.PathEscape(sid)+"/cmd/"+url.PathEscape(cmdID)+"/kill", nil,
		map[string]int{"signal": signal}, nil)
}

// readFile is POST /fs/read; a missing file is (nil, false, nil).
func (c *client) readFile(ctx context.Context, sid, path string) ([]byte, bool, error) {
	payload, _ := json.Marshal(map[string]string{"path": path})
	resp, err := c.send(ctx, http.MethodPost, "/v2/sandboxes/sessions/"+url.PathEscape(sid)+"/fs/read", nil, "application/json", nil, payload)
	var aerr *apiError
	if errors.As(err, &aerr) && aerr.Status == http.StatusNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, true, err
}

// writeTar is POST /fs/write: a gzip'ed tar extracted under dir.
func (c *client) writeTar(ctx context.Context, sid, dir string, gzTar []byte) error {
	h := http.Header{"X-Cwd": {dir}}
	resp, err := c.send(ctx, http.MethodPost, "/v2/sandboxes/sessions/"+url.PathEscape(sid)+"/fs/write", nil, "application/gzip", h, gzTar)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
