package sandboxserver

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"

	"connectrpc.com/connect"

	"github.com/hermes-go/hermes/internal/httpguard"
	"github.com/hermes-go/hermes/internal/sandboxserver/envd/filesystem/filesystemconnect"
	"github.com/hermes-go/hermes/internal/sandboxserver/envd/process/processconnect"
)

// envd's HTTP API (E2B's packages/envd spec, Apache-2.0): GET /health,
// GET and POST /files; and the Connect services process.Process and
// filesystem.Filesystem. The sandbox is named by the E2b-Sandbox-Id header
// and the request carries its envdAccessToken in X-Access-Token.

type sandboxKey struct{}

// sandboxOf returns the sandbox the envd middleware resolved.
func sandboxOf(ctx context.Context) *sandbox {
	sb, _ := ctx.Value(sandboxKey{}).(*sandbox)
	return sb
}

// EnvdHandler serves envd for every sandbox on one listener.
func (s *Server) EnvdHandler() http.Handler {
	mux := http.NewServeMux()
	procPath, procHandler := processconnect.NewProcessHandler(&processService{s: s}, connect.WithReadMaxBytes(maxJSONBody))
	fsPath, fsHandler := filesystemconnect.NewFilesystemHandler(&filesystemService{s: s}, connect.WithReadMaxBytes(maxJSONBody))
	mux.Handle(procPath, procHandler)
	mux.Handle(fsPath, fsHandler)
	mux.HandleFunc("GET /files", s.handleFileGet)
	mux.HandleFunc("POST /files", s.handleFilePost)
	return s.guard(envdBodyTypes, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("E2b-Sandbox-Id")
		sb := s.lookup(id)
		if r.URL.Path == "/health" {
			// Without a sandbox id it is the server's own health (the
			// Kubernetes readiness probe of deploy/kubernetes): 204.
			// With one, as envd behind E2B's proxy: 204 when the sandbox
			// runs, 502 when it does not (the SDK reads 502 as "not
			// running").
			if id == "" {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			if sb == nil || sb.currentState() != "running" {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if sb == nil {
			writeError(w, http.StatusBadGateway, "sandbox %q not found (E2b-Sandbox-Id header)", id)
			return
		}
		if !tokenOK(r.Header.Get("X-Access-Token"), sb.token) {
			writeError(w, http.StatusUnauthorized, "invalid or missing X-Access-Token for sandbox %s (its envdAccessToken)", id)
			return
		}
		if sb.currentState() != "running" {
			writeError(w, http.StatusBadGateway, "sandbox %s is paused: connect to it first", id)
			return
		}
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sandboxKey{}, sb)))
	}))
}

// envdBodyTypes are the body media types of envd's routes: the Connect
// protocol's on its services, and on POST /files what the E2B SDKs send
// (multipart/form-data, or application/octet-stream from envd 0.5.7).
func envdBodyTypes(r *http.Request) []string {
	switch {
	case strings.HasPrefix(r.URL.Path, "/"+processconnect.ProcessName+"/"), strings.HasPrefix(r.URL.Path, "/"+filesystemconnect.FilesystemName+"/"):
		return httpguard.ConnectTypes
	case r.URL.Path == "/files":
		return []string{"multipart/form-data", "application/octet-stream"}
	}
	return nil
}

func (sb *sandbox) currentState() string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.state
}

// resolvePath makes p absolute: relative paths start at the user's home,
// "~" is the home.
func resolvePath(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = UserHome + p[1:]
	}
	if !path.IsAbs(p) {
		p = path.Join(UserHome, p)
	}
	return path.Clean(p)
}

// fileStatus maps a file operation error to an HTTP status.
func fileStatus(err error) int {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return http.StatusNotFound
	case errors.Is(err, fs.ErrPermission):
		return http.StatusForbidden
	case errors.Is(err, fs.ErrExist):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

func (s *Server) handleFileGet(w http.ResponseWriter, r *http.Request) {
	sb := sandboxOf(r.Context())
	p := r.URL.Query().Get("path")
	if p == "" {
		writeError(w, http.StatusBadRequest, "path query parameter is required")
		return
	}
	p = resolvePath(p)
	env, err := s.env(r.Context(), sb)
	if err != nil {
		writeError(w, http.StatusBadGateway, "%v", err)
		return
	}
	st, err := env.Stat(r.Context(), p)
	if err == nil && st.IsDir {
		writeError(w, http.StatusBadRequest, "path %s is a directory", p)
		return
	}
	// The file is read whole into the server's memory: a box could make
	// a sparse file of many GiB and have it read (the read itself is not
	// bounded, so a file growing after this check still gets through).
	if err == nil && st.Size > s.cfg.MaxUploadBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "%s is %d bytes, over this server's %d: read it in parts with a command (split, dd)", p, st.Size, s.cfg.MaxUploadBytes)
		return
	}
	data, err := env.ReadFile(r.Context(), p)
	if err != nil {
		writeError(w, fileStatus(err), "%v", opError("read", p, err))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": path.Base(p)}))
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write(data)
		zw.Close()
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.Write(data)
}

// entryJSON is envd's EntryInfo of the /files answer.
type entryJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

func (s *Server) handleFilePost(w http.ResponseWriter, r *http.Request) {
	sb := sandboxOf(r.Context())
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxUploadBytes)
	env, err := s.env(r.Context(), sb)
	if err != nil {
		writeError(w, http.StatusBadGateway, "%v", err)
		return
	}
	qpath := r.URL.Query().Get("path")
	var written []entryJSON
	// left is what the request may still write: the bound is on the
	// whole request, so that gzip parts (each a small body decoding to
	// MaxUploadBytes) do not multiply it.
	left := s.cfg.MaxUploadBytes
	write := func(p string, body io.Reader, gz bool) (int, error) {
		if gz {
			zr, err := gzip.NewReader(body)
			if err != nil {
				return http.StatusBadRequest, fmt.Errorf("gzip body: %v", err)
			}
			body = zr
		}
		data, err := io.ReadAll(io.LimitReader(body, left+1))
		if err != nil {
			return http.StatusBadRequest, fmt.Errorf("read upload: %v", err)
		}
		if int64(len(data)) > left {
			return http.StatusRequestEntityTooLarge, fmt.Errorf("upload is over %d bytes", s.cfg.MaxUploadBytes)
		}
		left -= int64(len(data))
		p = resolvePath(p)
		if err := env.WriteFile(r.Context(), p, data, 0o644); err != nil {
			return fileStatus(err), fmt.Errorf("write %s: %v", p, err)
		}
		written = append(written, entryJSON{Name: path.Base(p), Type: "file", Path: p})
		return 0, nil
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				writeError(w, http.StatusBadRequest, "multipart body: %v", err)
				return
			}
			p := qpath
			// part.FileName() keeps only the base name; envd takes the path.
			_, dp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			if fn := dp["filename"]; p == "" || (fn != "" && path.IsAbs(fn)) {
				p = fn
			}
			if p == "" {
				writeError(w, http.StatusBadRequest, "a file part has no path (path query or part filename)")
				return
			}
			if code, err := write(p, part, part.Header.Get("Content-Encoding") == "gzip"); err != nil {
				writeError(w, code, "%v", err)
				return
			}
		}
	} else {
		if qpath == "" {
			writeError(w, http.StatusBadRequest, "path query parameter is required for an octet-stream upload")
			return
		}
		if code, err := write(qpath, r.Body, r.Header.Get("Content-Encoding") == "gzip"); err != nil {
			writeError(w, code, "%v", err)
			return
		}
	}
	if len(written) == 0 {
		writeError(w, http.StatusBadRequest, "no file in the upload")
		return
	}
	writeJSON(w, http.StatusOK, written)
}
