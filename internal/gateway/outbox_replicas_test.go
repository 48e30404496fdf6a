package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// downPlatform refuses every send as a revoked token does: the reply is
// kept at once.
type downPlatform struct{ memPlatform }

func (d *downPlatform) Send(context.Context, string, OutMessage) (string, error) {
	return "", fmt.Errorf("%w: 401 Unauthorized", ErrRevoked)
}

// postgresRuntime is a runtime in its own HERMES_HOME on the PostgreSQL
// schema (database.backend: postgres), as one replica has it.
func postgresRuntime(t *testing.T, srv *llmtest.Server, url, schema string) *session.Runtime {
	dbYAML := fmt.Sprintf("database:\n  backend: postgres\n  url: %q\n  schema: %s\n", url, schema)
	return newRuntimeWith(t, srv, t.TempDir(), func(o *session.Options) {
		path := filepath.Join(o.Home, "config.yaml")
		b, err := os.ReadFile(path)
		if err == nil {
			err = os.WriteFile(path, append(b, dbYAML...), 0o600)
		}
		if err == nil {
			o.Config, err = config.Load(o.Home, config.LoadOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestUndeliveredRepliesRetriedByAnotherReplica: replica A cannot deliver
// two replies to one chat (its token is revoked); replica B, on the same
// PostgreSQL database and running the platform, delivers both, in order,
// and the queue is empty for both.
func TestUndeliveredRepliesRetriedByAnotherReplica(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	srv := llmtest.NewServer(t)
	rtA, rtB := postgresRuntime(t, srv, url, schema), postgresRuntime(t, srv, url, schema)
	fast := RetryPolicy{Base: time.Millisecond, Max: time.Millisecond}
	a, err := NewChat(rtA, &downPlatform{}, ChatConfig{Auth: Authorization{AllowAll: true}, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, text := range []string{"first", "second"} {
		if err := a.Deliver(ctx, "42", text); err != nil {
			t.Fatalf("keeping %q: %v", text, err)
		}
	}
	if n := a.Undelivered(); n != 2 {
		t.Fatalf("replica A kept %d replies; want 2", n)
	}
	up := &memPlatform{sent: map[string][]string{}}
	b, err := NewChat(rtB, up, ChatConfig{Auth: Authorization{AllowAll: true}, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Undelivered(); n != 2 {
		t.Fatalf("replica B sees %d kept replies; want A's 2", n)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { b.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	sent := func() []string {
		up.mu.Lock()
		defer up.mu.Unlock()
		return slices.Clone(up.sent["42"])
	}
	waitfor.Until(t, "replica B delivers both kept replies", func() bool { return len(sent()) >= 2 })
	if got := sent(); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("replica B sent %q; want [first second], once each, in order", got)
	}
	waitfor.Until(t, "the queue empties for both replicas", func() bool { return a.Undelivered() == 0 })
}
