package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
)

// endlessJSONServer is a streamable HTTP MCP server whose tools/call
// answer is a JSON body that never ends (up to 512 MiB); sent counts the
// bytes of that body written before hermes stopped reading.
func endlessJSONServer(t *testing.T, sent *atomic.Int64) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil || req.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		w.Header().Set("Content-Type", "application/json")
		reply := func(result any) {
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		}
		switch req.Method {
		case "initialize":
			reply(map[string]any{"protocolVersion": req.Params.ProtocolVersion, "serverInfo": map[string]any{"name": "endless", "version": "1"},
				"capabilities": map[string]any{"tools": map[string]any{}}})
		case "tools/list":
			reply(map[string]any{"tools": []map[string]any{{"name": "big", "inputSchema": map[string]any{"type": "object"}}}})
		case "tools/call":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[{"type":"text","text":"`))
			chunk := []byte(strings.Repeat("A", 1<<20))
			for i := 0; i < 512; i++ {
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		default:
			reply(map[string]any{})
		}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// An HTTP server's JSON answer is read up to a bound: a body that never
// ends made hermes read it all into memory (io.ReadAll in the SDK) until
// it ran out.
func TestHTTPAnswerSizeIsBounded(t *testing.T) {
	var sent atomic.Int64
	url := endlessJSONServer(t, &sent)
	srv := config.MCPServer{URL: url, ConnectTimeout: 30, Timeout: 120}
	_, reg, _ := startManager(t, map[string]config.MCPServer{"endless": srv}, nil)
	res := call(t, reg, "mcp__endless__big", `{}`)
	if !res.IsError {
		t.Errorf("an endless answer was not an error: %.200s", res.Content)
	}
	if n := sent.Load(); n > 64<<20 {
		t.Errorf("hermes read %d MiB of one answer", n>>20)
	}
}

// A server's configured headers (its credentials) go to its own host
// only: a redirect of the endpoint to another host (a moved service, a
// login page) got them too, since hermes added them to every request.
func TestHeadersNotSentToRedirectedHost(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key"); v != "" {
			leaked.Store(v)
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(other.Close)
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(first.Close)
	srv := config.MCPServer{URL: first.URL + "/mcp", ConnectTimeout: 10, Timeout: 10,
		Headers: map[string]string{"Authorization": "Bearer hdr-secret-123456", "X-Api-Key": "key-secret-123456"}}
	startManager(t, map[string]config.MCPServer{"moved": srv}, nil)
	if v := leaked.Load().(string); v != "" {
		t.Errorf("the redirected host got the server's credentials: %q", v)
	}
}
