package e2b_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend/e2b"
)

// fakeE2B is E2B's REST API at the network edge: one paused sandbox for
// the task, whose connect answers connectStatus; it counts creates.
type fakeE2B struct {
	connectStatus int
	mu            sync.Mutex
	creates       int
}

func (f *fakeE2B) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && r.URL.Path == "/v2/sandboxes":
		json.NewEncoder(w).Encode([]map[string]string{{"sandboxID": "sbx-old", "startedAt": "2026-12-01T00:00:00Z"}})
	case r.Method == "POST" && r.URL.Path == "/sandboxes/sbx-old/connect":
		w.WriteHeader(f.connectStatus)
		json.NewEncoder(w).Encode(map[string]any{"code": f.connectStatus, "message": "sandbox sbx-old: " + http.StatusText(f.connectStatus)})
	case r.Method == "POST" && r.URL.Path == "/sandboxes":
		f.mu.Lock()
		f.creates++
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]string{"sandboxID": "sbx-new", "envdAccessToken": "t"})
	default:
		http.NotFound(w, r)
	}
}

// A later run of a persistent task whose paused sandbox is gone (404: the
// server lost it) tells the person that a new, empty sandbox replaces it;
// a connect that fails otherwise (a server restarting) creates nothing and
// says so, rather than hiding the old sandbox's files behind a new one.
func TestGonePausedSandboxIsTold(t *testing.T) {
	for _, tc := range []struct {
		status      int
		wantCreates int
		wantNotice  bool
	}{{http.StatusNotFound, 1, true}, {http.StatusServiceUnavailable, 0, false}} {
		fake := &fakeE2B{connectStatus: tc.status}
		srv := httptest.NewServer(fake)
		var notices []string
		b, err := e2b.New(e2b.Options{APIURL: srv.URL, SandboxURL: srv.URL, APIKey: "k", Timeout: time.Minute, Persistent: true,
			Notice: func(line string) { notices = append(notices, line) }})
		if err != nil {
			t.Fatal(err)
		}
		env, _ := b.Open(context.Background(), "task-1")
		_, err = env.ReadFile(context.Background(), "kept.txt") // the first operation connects or creates
		if fake.creates != tc.wantCreates {
			t.Errorf("connect %d: %d creates, want %d", tc.status, fake.creates, tc.wantCreates)
		}
		if got := len(notices) == 1 && strings.Contains(notices[0], "sbx-old") && strings.Contains(notices[0], "gone"); got != tc.wantNotice {
			t.Errorf("connect %d: notices %q, want one naming sbx-old as gone: %v", tc.status, notices, tc.wantNotice)
		}
		if tc.status != http.StatusNotFound && (err == nil || !strings.Contains(err.Error(), "nothing was created")) {
			t.Errorf("connect %d: error %v, want one saying nothing was created", tc.status, err)
		}
		srv.Close()
	}
}
