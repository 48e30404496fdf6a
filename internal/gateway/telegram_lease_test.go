package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/store/postgres"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// crashableLease is a PostgreSQL lease whose holder dies without a word:
// once crashed, nothing more reaches the database (no renewal, no
// release, no offset), as after kill -9. With crashAt set, it dies right
// after committing the offset past update crashAt: the update is taken
// but the holder never confirms it to Telegram with its next getUpdates.
type crashableLease struct {
	*postgres.Lease
	crashAt atomic.Int64
	crashed chan struct{}
	once    sync.Once
}

var errKilled = errors.New("killed")

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (c *crashableLease) dead() bool {
	select {
	case <-c.crashed:
		return true
	default:
		return false
	}
}

func (c *crashableLease) crash() { c.once.Do(func() { close(c.crashed) }) }

func (c *crashableLease) Acquire(ctx context.Context) (int64, bool, error) {
	if c.dead() {
		return 0, false, errKilled
	}
	return c.Lease.Acquire(ctx)
}

func (c *crashableLease) Renew(ctx context.Context) (bool, error) {
	if c.dead() {
		return false, errKilled
	}
	return c.Lease.Renew(ctx)
}

func (c *crashableLease) Advance(ctx context.Context, cursor int64) (bool, error) {
	if c.dead() {
		return false, errKilled
	}
	ok, err := c.Lease.Advance(ctx, cursor)
	if cursor-1 == c.crashAt.Load() {
		c.crash()
	}
	return ok, err
}

func (c *crashableLease) Release(ctx context.Context) error {
	if c.dead() {
		return errKilled
	}
	return c.Lease.Release(ctx)
}

// replica is one gateway of a test's replicas: its own HERMES_HOME and
// runtime on the shared PostgreSQL schema, its Telegram adapter polling
// only while it holds the bot's lease.
type replica struct {
	name   string
	lease  *crashableLease
	leads  chan struct{} // closed when it first becomes the leader
	cancel context.CancelFunc
	done   chan error
}

func startReplica(t *testing.T, name string, fake *telegramtest.Server, srv *llmtest.Server, dbConf string,
	ttl time.Duration) *replica {
	t.Helper()
	rt := newRuntimeWith(t, srv, t.TempDir(), func(o *session.Options) {
		path := filepath.Join(o.Home, "config.yaml")
		b, err := os.ReadFile(path)
		if err == nil {
			err = os.WriteFile(path, append(b, dbConf...), 0o600)
		}
		if err == nil {
			o.Config, err = config.Load(o.Home, config.LoadOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	db, ok := rt.Store().(*postgres.DB)
	if !ok {
		t.Fatalf("the runtime's store is %T, not PostgreSQL", rt.Store())
	}
	r := &replica{name: name, leads: make(chan struct{}), done: make(chan error, 1),
		lease: &crashableLease{Lease: db.Lease("telegram:123", name, ttl), crashed: make(chan struct{})}}
	r.lease.crashAt.Store(-1)
	var once sync.Once
	warn := func(s string) {
		t.Log(name + ": " + s)
		if strings.Contains(s, "leader now") {
			once.Do(func() { close(r.leads) })
		}
	}
	tg, err := NewTelegram(context.Background(), rt, TelegramConfig{Token: fake.Token, BaseURL: fake.URL, AllowAll: true,
		PollTimeout: 2 * time.Second, TypingEvery: time.Hour, Warn: warn, Lease: r.lease})
	if err != nil {
		t.Fatal(err)
	}
	// A dead replica's getUpdates never reach the Bot API.
	tg.poll = &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if r.lease.dead() {
			return nil, errKilled
		}
		return http.DefaultTransport.RoundTrip(req)
	})}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- tg.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
	r.done <- nil
}

// Two gateway replicas on one database: one long-polls the bot; its
// death hands the bot to the other within the lease time; the fake Bot
// API never sees two getUpdates consumers at once, and every update is
// answered exactly once, though the dead leader never confirmed to
// Telegram the last update it took.
func TestTelegramLeaderFailoverAnswersEachUpdateOnce(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	dbConf := fmt.Sprintf("database:\n  backend: postgres\n  url: %q\n  schema: %s\n", url, schema)
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	fake := telegramtest.New("123:TESTTOKEN")
	t.Cleanup(fake.Close)
	const ttl = 1500 * time.Millisecond
	a := startReplica(t, "replica-a", fake, srv, dbConf, ttl)
	b := startReplica(t, "replica-b", fake, srv, dbConf, ttl)
	var leader, standby *replica
	select {
	case <-a.leads:
		leader, standby = a, b
	case <-b.leads:
		leader, standby = b, a
	case <-time.After(time.Until(waitfor.Deadline(t))):
		t.Fatal("no replica became the leader")
	}
	const users = 8
	round := func(n int) {
		for u := int64(1); u <= users; u++ {
			fake.SendText(u, u, "private", fmt.Sprintf("round %d from %d", n, u))
		}
		for u := int64(1); u <= users; u++ {
			fake.WaitSent(t, u, n)
		}
	}
	round(1)
	// The leader dies right after taking the first update of round 2
	// (update ids 1…8 were round 1): it answers it (the chat core has it)
	// but never confirms it to Telegram with a next getUpdates. The rest
	// of round 2 waits for the next leader.
	leader.lease.crashAt.Store(users + 1)
	round(2)
	select {
	case <-standby.leads:
	default:
		t.Fatalf("%s answered round 2 without becoming the leader", standby.name)
	}
	if !leader.lease.dead() {
		t.Fatal("the leader did not die at update 9")
	}
	// Telegram still held update 9 unconfirmed; the new leader asked from
	// the offset in the database, which confirmed it without getting it.
	if n := fake.Deliveries(users + 1); n != 1 {
		t.Errorf("update %d was delivered %d times, want 1 (to the dead leader only)", users+1, n)
	}
	round(3)
	for u := int64(1); u <= users; u++ {
		got := fake.Sent(u)
		var texts []string
		for _, m := range got {
			texts = append(texts, m.Text)
		}
		if len(got) != 3 {
			t.Errorf("user %d got %d answers, want 3 (one per update): %q", u, len(got), texts)
			continue
		}
		for i, m := range got {
			if want := fmt.Sprintf("echo: round %d from %d #", i+1, u); !strings.HasPrefix(m.Text, want) {
				t.Errorf("user %d answer %d = %q, want %q…", u, i+1, m.Text, want)
			}
		}
	}
	if n := fake.MaxConcurrentPolls(); n != 1 {
		t.Errorf("the fake Bot API saw %d getUpdates consumers at once, want 1", n)
	}
	if n := fake.Conflicts(); n != 0 {
		t.Errorf("%d getUpdates requests were terminated by another (409 Conflict)", n)
	}
}
