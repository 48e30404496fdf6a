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

	"github.com/hermes-go/hermes/internal/envd/filesystem/filesystemconnect"
	"github.com/hermes-go/hermes/internal/envd/process/processconnect"
	"github.com/hermes-go/hermes/internal/httpguard"
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
		id := envdSandboxID(r)
		if s.routeEnvd(w, r, id) {
			return
		}
		sb := s.lookup(id)
		if r.URL.Path == "/health" {
			// Without a sandbox id it is the server's own health (the
			// Kubernetes readiness probe of deploy/kubernetes): 204.
			// With one, as envd behind E2B's proxy: 204 when the sandbox
			// runs, 502 when it does not (the SDK reads 502 as "not
			// running"). The sandbox's token is required as on every
			// other route (the E2B SDKs' envd client sends X-Access-Token
			// on /health too): without it a running sandbox answers 502
			// as a made-up id does, so that another tenant cannot confirm
			// its id.
			if id == "" {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			if sb == nil || !tokenOK(r.Header.Get("X-Access-Token"), sb.token) || sb.currentState() != "running" {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		// A sandbox is reached with its envdAccessToken, which only its
		// tenant is given: without it, the sandbox is answered as one that
		// does not exist (as E2B's proxy does, 502, which the SDKs read as
		// "not running"), so that another tenant cannot confirm its id.
		if sb == nil || !tokenOK(r.Header.Get("X-Access-Token"), sb.token) {
			closeUnreadBody(w, r)
			writeError(w, http.StatusBadGateway, "sandbox %q not found, or the X-Access-Token is not its envdAccessToken (E2b-Sandbox-Id header)", id)
			return
		}
		if sb.currentState() != "running" {
			writeError(w, http.StatusBadGateway, "sandbox %s is paused: connect to it first", id)
			return
		}
		u, err := s.requestUser(r)
		if err != nil {
			closeUnreadBody(w, r)
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		if u, err = s.userFor(r.Context(), sb, u); err != nil { // a template image's User (image.go)
			closeUnreadBody(w, r)
			writeError(w, http.StatusInternalServerError, "sandbox %s: %v", id, err)
			return
		}
		ctx := context.WithValue(context.WithValue(r.Context(), sandboxKey{}, sb), userKey{}, u)
		mux.ServeHTTP(w, r.WithContext(ctx))
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
	case errors.Is(err, fs.ErrInvalid):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// handleFileGet streams a file of the box to the client (transfer.go),
// whatever its size.
func (s *Server) handleFileGet(w http.ResponseWriter, r *http.Request) {
	sb := sandboxOf(r.Context())
	p := r.URL.Query().Get("path")
	if p == "" {
		writeError(w, http.StatusBadRequest, "path query parameter is required")
		return
	}
	p = resolvePath(p)
	env, err := s.userEnv(r.Context(), sb)
	if err != nil {
		writeError(w, http.StatusBadGateway, "%v", err)
		return
	}
	if st, err := env.Stat(r.Context(), p); err != nil {
		writeError(w, fileStatus(err), "%v", opError("read", p, err))
		return
	} else if st.IsDir {
		writeError(w, http.StatusBadRequest, "path %s is a directory", p)
		return
	}
	buf, err := s.transfers.take(r.Context())
	if err != nil {
		return // the client went away while waiting
	}
	defer s.transfers.give(buf)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	gz := strings.Contains(r.Header.Get("Accept-Encoding"), "gzip")
	out := &responseStream{w: w, rc: http.NewResponseController(w), buf: buf, idle: s.cfg.BodyTimeout, cancel: cancel,
		headers: func() {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": path.Base(p)}))
			if gz {
				w.Header().Set("Content-Encoding", "gzip")
			}
		}}
	var dst io.Writer = out
	var zw *gzip.Writer
	if gz {
		zw, _ = gzip.NewWriterLevel(out, gzip.BestSpeed)
		dst = zw
	}
	err = streamerOf(env).ReadFileTo(ctx, p, dst)
	if err == nil && zw != nil {
		err = zw.Close()
	}
	if err == nil {
		out.Write(nil) // an empty file still gets its headers
		err = out.Flush()
	}
	if err != nil && !out.started {
		writeError(w, fileStatus(err), "%v", opError("read", p, err))
		return
	}
	if err != nil && out.err == nil {
		// Mid-stream the status is gone: the client sees a cut body.
		s.cfg.Log.Warn("download cut short", "sandbox", sb.id, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// entryJSON is envd's EntryInfo of the /files answer.
type entryJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

// handleFilePost streams the files of an upload (multipart or the body
// itself) into the box (transfer.go), MaxUploadBytes in all.
func (s *Server) handleFilePost(w http.ResponseWriter, r *http.Request) {
	sb := sandboxOf(r.Context())
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxUploadBytes)
	env, err := s.userEnv(r.Context(), sb)
	if err != nil {
		writeError(w, http.StatusBadGateway, "%v", err)
		return
	}
	buf, err := s.transfers.take(r.Context())
	if err != nil {
		return
	}
	defer s.transfers.give(buf)
	files := streamerOf(env)
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
		p = resolvePath(p)
		err := files.WriteFileFrom(r.Context(), p, budgetReader{r: capReader{r: body, left: &left}, buf: buf}, 0o644)
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, errTooLarge) || errors.As(err, &tooBig):
			return http.StatusRequestEntityTooLarge, fmt.Errorf("upload is over %d bytes", s.cfg.MaxUploadBytes)
		case errors.As(err, new(sourceError)):
			return http.StatusBadRequest, fmt.Errorf("read upload: %v", err)
		case err != nil:
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

// closeUnreadBody sets Connection: close on a refusal of a request whose
// body was not read, so that net/http closes the connection instead of
// reading a (perhaps trickled) body before the refusal goes out.
func closeUnreadBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}
