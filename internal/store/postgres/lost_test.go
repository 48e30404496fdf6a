package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/postgres"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// cutProxy stands between hermes and the test server, as the network
// does: cut drops every connection and refuses new ones (the server
// stopped, a failover, a partition) until mend.
type cutProxy struct {
	ln       net.Listener
	upstream func() (net.Conn, error)
	mu       sync.Mutex
	cut      bool
	refused  int
	conns    map[net.Conn]bool
}

// newCutProxy proxies the server rawURL names and returns the URL that
// goes through the proxy.
func newCutProxy(t *testing.T, rawURL string) (*cutProxy, string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	network, addr := "tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, conns: map[net.Conn]bool{},
		upstream: func() (net.Conn, error) { return net.Dial(network, addr) }}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	u := url.URL{Scheme: "postgres", Host: ln.Addr().String(), Path: "/" + cfg.Database,
		User: url.UserPassword(cfg.User, cfg.Password), RawQuery: "sslmode=disable"}
	if cfg.Password == "" {
		u.User = url.User(cfg.User)
	}
	return p, u.String()
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.refused++
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		up, err := p.upstream()
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

func (p *cutProxy) refusedSoFar() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// A write whose connection is lost is retried with backoff on a new
// connection: the database coming back within the bound saves it, once.
func TestWriteRetriedWhenTheConnectionComesBack(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	proxy, via := newCutProxy(t, url)
	db := open(t, via, schema)
	ctx := context.Background()
	s, err := db.CreateSession(ctx, store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleUser, Content: "before"}); err != nil {
		t.Fatal(err)
	}
	proxy.setCut(true)
	done := make(chan error, 1)
	go func() {
		_, err := db.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleAssistant, Content: "during"})
		done <- err
	}()
	// Wait until the write has come back for a new connection twice.
	waitfor.Until(t, "the write's reconnection attempts", func() bool { return proxy.refusedSoFar() >= 2 })
	proxy.setCut(false)
	if err := waitfor.Recv(t, done, "the retried write"); err != nil {
		t.Fatalf("the write failed though the database came back: %v", err)
	}
	msgs, err := db.Messages(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[1].Content != "during" {
		t.Fatalf("messages after the retry: %+v", msgs)
	}
}

// A database that stays away fails the write with a clear error naming
// the store, and nothing of the write is saved.
func TestWriteFailsClearlyWhenTheDatabaseStaysAway(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	proxy, via := newCutProxy(t, url)
	db := open(t, via, schema)
	db.SetWriteRetry(500 * time.Millisecond)
	ctx := context.Background()
	s, err := db.CreateSession(ctx, store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	proxy.setCut(true)
	_, err = db.AppendMessageUsage(ctx, s.ID, llm.Message{Role: llm.RoleAssistant, Content: "lost"},
		llm.Usage{InputTokens: 7, OutputTokens: 3}, 1)
	var lost *postgres.LostError
	if !errors.As(err, &lost) || lost.Committing {
		t.Fatalf("err = %v (%T), want a *postgres.LostError before commit", err, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "127.0.0.1") || !strings.Contains(msg, "nothing of this write was saved") {
		t.Errorf("the error does not name the store and what was lost: %q", msg)
	}
	proxy.setCut(false)
	got, err := db.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.MessageCount != 0 || got.Usage.InputTokens != 0 {
		t.Fatalf("half of the failed write was saved: %d messages, %d input tokens", got.MessageCount, got.Usage.InputTokens)
	}
	if _, err := db.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleUser, Content: "after"}); err != nil {
		t.Fatalf("no reconnection once the database is back: %v", err)
	}
}
