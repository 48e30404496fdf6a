// Package verceltest is a fake Vercel Sandbox API for tests: the REST
// calls of @vercel/sandbox 3.5.0 (paths, JSON shapes, ndjson command
// streams, {"error": {"message", "code"}} errors, Bearer auth, teamId)
// served by an httptest server that runs each "sandbox" as a directory on
// this machine and its commands as local processes. Snapshots copy the
// directory. It is the network edge of the vercel_sandbox backend's
// tests, nothing more: there is no isolation.
package verceltest

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is the fake API.
type Server struct {
	URL   string
	Token string
	Team  string

	srv  *httptest.Server
	root string // directories of sessions and snapshots

	mu        sync.Mutex
	sessions  map[string]*session
	snapshots map[string]string // id → directory
	failNext  map[string]int    // path suffix → status of the next answer
	next      int
	calls     map[string]int // by path
}

type session struct {
	id      string
	dir     string
	runtime string
	vcpus   int
	timeout int64
	stopped bool
	cmds    map[string]*exec.Cmd
}

// New starts a fake accepting token for team; dirs live under t's temp dir.
func New(root, token, team string) *Server {
	s := &Server{Token: token, Team: team, root: root, sessions: map[string]*session{}, snapshots: map[string]string{},
		failNext: map[string]int{}, calls: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL
	return s
}

// Close stops every session's processes and the server.
func (s *Server) Close() {
	s.mu.Lock()
	for _, ss := range s.sessions {
		s.stopLocked(ss)
	}
	s.mu.Unlock()
	s.srv.Close()
}

// FailNext makes the next call whose path ends in suffix answer status.
func (s *Server) FailNext(suffix string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext[suffix] = status
}

// Calls counts the calls whose path ends in suffix.
func (s *Server) Calls(suffix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p, c := range s.calls {
		if strings.HasSuffix(p, suffix) {
			n += c
		}
	}
	return n
}

// Running counts the processes still alive in all sessions.
func (s *Server) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.sessions {
		for _, c := range ss.cmds {
			if c.ProcessState == nil && syscall.Kill(-c.Process.Pid, 0) == nil {
				n++
			}
		}
	}
	return n
}

// Sessions returns the ids of sessions not stopped.
func (s *Server) Sessions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, ss := range s.sessions {
		if !ss.stopped {
			ids = append(ids, id)
		}
	}
	return ids
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg, "code": code}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		writeError(w, http.StatusForbidden, "forbidden", "Not authorized")
		return
	}
	if r.URL.Query().Get("teamId") != s.Team {
		writeError(w, http.StatusBadRequest, "bad_request", "teamId does not match the token's team")
		return
	}
	s.mu.Lock()
	for suffix, status := range s.failNext {
		if strings.HasSuffix(r.URL.Path, suffix) {
			delete(s.failNext, suffix)
			s.mu.Unlock()
			w.Header().Set("Retry-After", "0")
			writeError(w, status, "injected", fmt.Sprintf("injected HTTP %d", status))
			return
		}
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v2/sandboxes"), "/")
	s.calls[r.URL.Path]++
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v2/sandboxes":
		s.create(w, r)
	case len(parts) >= 3 && parts[1] == "sessions":
		ss := s.lookup(parts[2])
		if ss == nil {
			writeError(w, http.StatusNotFound, "not_found", "Sandbox session not found")
			return
		}
		s.sessionCall(w, r, ss, parts[3:])
	default:
		writeError(w, http.StatusNotFound, "not_found", "Not found")
	}
}

func (s *Server) lookup(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (s *Server) sessionJSON(ss *session) map[string]any {
	now := time.Now().UnixMilli()
	status := "running"
	if ss.stopped {
		status = "stopped"
	}
	return map[string]any{"id": ss.id, "memory": ss.vcpus * 2048, "vcpus": ss.vcpus, "region": "iad1", "runtime": ss.runtime,
		"timeout": ss.timeout, "status": status, "requestedAt": now, "createdAt": now, "updatedAt": now, "cwd": ss.dir}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ProjectID string `json:"projectId"`
		Runtime   string `json:"runtime"`
		Timeout   int64  `json:"timeout"`
		Resources *struct {
			VCPUs int `json:"vcpus"`
		} `json:"resources"`
		Source *struct {
			Type       string `json:"type"`
			SnapshotID string `json:"snapshotId"`
		} `json:"source"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "Invalid JSON body")
		return
	}
	vcpus := 2
	if req.Resources != nil {
		vcpus = req.Resources.VCPUs
	}
	if vcpus != 1 && vcpus != 2 && vcpus != 4 && vcpus != 8 {
		writeError(w, http.StatusBadRequest, "bad_request", "resources.vcpus must be one of 1, 2, 4, 8")
		return
	}
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("sbx_%06d", s.next)
	s.mu.Unlock()
	dir := filepath.Join(s.root, id, "vercel", "sandbox")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	if req.Source != nil {
		s.mu.Lock()
		snap, ok := s.snapshots[req.Source.SnapshotID]
		s.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, "snapshot_not_found", "Snapshot not found")
			return
		}
		if err := exec.Command("cp", "-a", snap+"/.", dir).Run(); err != nil {
			writeError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
	} else if req.Runtime == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "runtime or source is required")
		return
	}
	ss := &session{id: id, dir: dir, runtime: req.Runtime, vcpus: vcpus, timeout: req.Timeout, cmds: map[string]*exec.Cmd{}}
	s.mu.Lock()
	s.sessions[id] = ss
	s.mu.Unlock()
	now := time.Now().UnixMilli()
	writeJSON(w, map[string]any{
		"sandbox": map[string]any{"name": id, "persistent": false, "createdAt": now, "updatedAt": now, "currentSessionId": id, "status": "running"},
		"session": s.sessionJSON(ss), "routes": []any{},
	})
}

func (s *Server) stopLocked(ss *session) {
	ss.stopped = true
	for _, c := range ss.cmds {
		if c.Process != nil {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
	}
}

func (s *Server) sessionCall(w http.ResponseWriter, r *http.Request, ss *session, rest []string) {
	s.mu.Lock()
	stopped := ss.stopped
	s.mu.Unlock()
	if stopped {
		writeError(w, http.StatusGone, "sandbox_stopped", "Sandbox session is stopped")
		return
	}
	switch strings.Join(rest, "/") {
	case "cmd":
		s.runCommand(w, r, ss)
	case "stop":
		s.mu.Lock()
		s.stopLocked(ss)
		s.mu.Unlock()
		writeJSON(w, map[string]any{"session": s.sessionJSON(ss)})
	case "extend-timeout":
		var req struct {
			Duration int64 `json:"duration"`
		}
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req)
		s.mu.Lock()
		ss.timeout += req.Duration
		s.mu.Unlock()
		writeJSON(w, map[string]any{"session": s.sessionJSON(ss)})
	case "snapshot":
		s.snapshot(w, ss)
	case "fs/read":
		var req struct {
			Path string `json:"path"`
		}
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req)
		data, err := os.ReadFile(req.Path)
		if err != nil {
			writeError(w, http.StatusNotFound, "file_not_found", "File not found")
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
	case "fs/write":
		if err := extract(r.Body, r.Header.Get("X-Cwd"), []string{s.root, os.TempDir()}); err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		writeJSON(w, map[string]any{})
	default:
		if len(rest) == 3 && rest[0] == "cmd" && rest[2] == "kill" {
			var req struct {
				Signal int `json:"signal"`
			}
			_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req)
			s.mu.Lock()
			c := ss.cmds[rest[1]]
			s.mu.Unlock()
			if c == nil || c.Process == nil {
				writeError(w, http.StatusNotFound, "not_found", "Command not found")
				return
			}
			_ = c.Process.Signal(syscall.Signal(req.Signal))
			writeJSON(w, map[string]any{"command": map[string]any{"id": rest[1], "name": "sh", "args": []string{}, "cwd": "/",
				"sessionId": ss.id, "exitCode": nil, "startedAt": time.Now().UnixMilli()}})
			return
		}
		writeError(w, http.StatusNotFound, "not_found", "Not found")
	}
}

func (s *Server) snapshot(w http.ResponseWriter, ss *session) {
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("snap_%06d", s.next)
	s.mu.Unlock()
	dir := filepath.Join(s.root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	if err := exec.Command("cp", "-a", ss.dir+"/.", dir).Run(); err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	s.mu.Lock()
	s.snapshots[id] = dir
	s.stopLocked(ss) // snapshotting stops the session, as on Vercel
	s.mu.Unlock()
	now := time.Now().UnixMilli()
	writeJSON(w, map[string]any{"snapshot": map[string]any{"id": id, "sourceSessionId": ss.id, "region": "iad1", "status": "created",
		"sizeBytes": 0, "createdAt": now, "updatedAt": now}, "session": s.sessionJSON(ss)})
}

// runCommand answers POST /cmd with wait: an ndjson stream of the command
// record, its output lines as they come, and the finished record.
func (s *Server) runCommand(w http.ResponseWriter, r *http.Request, ss *session) {
	var req struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Cwd     string            `json:"cwd"`
		Env     map[string]string `json:"env"`
		Wait    bool              `json:"wait"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&req); err != nil || req.Command == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "command is required")
		return
	}
	c := exec.Command(req.Command, req.Args...)
	c.Dir = req.Cwd
	if c.Dir == "" {
		c.Dir = ss.dir
	}
	c.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + ss.dir}
	for k, v := range req.Env {
		c.Env = append(c.Env, k+"="+v)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, _ := c.StdoutPipe()
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("cmd_%06d", s.next)
	ss.cmds[id] = c
	s.mu.Unlock()
	record := func(exit any) map[string]any {
		return map[string]any{"command": map[string]any{"id": id, "name": req.Command, "args": req.Args, "cwd": c.Dir,
			"sessionId": ss.id, "exitCode": exit, "startedAt": time.Now().UnixMilli()}}
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	flusher, _ := w.(http.Flusher)
	var wmu sync.Mutex
	emit := func(v any) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = json.NewEncoder(w).Encode(v)
		if flusher != nil {
			flusher.Flush()
		}
	}
	emit(record(nil))
	var wg sync.WaitGroup
	pump := func(rd io.Reader, stream string) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := rd.Read(buf)
			if n > 0 {
				emit(map[string]any{"stream": stream, "data": string(buf[:n])})
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pump(stdout, "stdout")
	go pump(stderr, "stderr")
	wg.Wait()
	_ = c.Wait()
	exit := c.ProcessState.ExitCode()
	if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		exit = 128 + int(ws.Signal())
	}
	emit(record(exit))
}

// extract unpacks a gzip'ed tar under dir, refusing entries that leave
// the allowed roots (this fake writes the real file system).
func extract(body io.Reader, dir string, roots []string) error {
	gz, err := gzip.NewReader(io.LimitReader(body, 64<<20))
	if err != nil {
		return fmt.Errorf("body is not gzip: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, h.Name)
		allowed := false
		for _, root := range roots {
			allowed = allowed || strings.HasPrefix(target, filepath.Clean(root)+"/")
		}
		if !allowed {
			if h.Typeflag == tar.TypeDir {
				continue // parents of an allowed root
			}
			return fmt.Errorf("path %s is outside the sandbox", target)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
}
