package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// lastRole is the role of the last message of a chat request.
func lastRole(r llmtest.Request) string {
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &body)
	if n := len(body.Messages); n > 0 {
		return body.Messages[n-1].Role
	}
	return ""
}

func TestSessionsAnswerConcurrentlyEachTheirOwn(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newTestRuntime(t, srv, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s, err := rt.Open(context.Background(), OpenOptions{Key: fmt.Sprintf("chat:%d", i), Source: "telegram"})
			if err != nil {
				t.Error(err)
				return
			}
			sub := s.Subscribe(SubscribeOptions{})
			defer sub.Close()
			turn, ack, err := s.Send(context.Background(), fmt.Sprintf("hello %d", i), SendOptions{})
			if err != nil || ack.Position != 0 {
				t.Errorf("send: %+v %v", ack, err)
				return
			}
			evs := collect(t, sub, turn.ID)
			last := evs[len(evs)-1]
			if last.Kind != Final || last.Text != fmt.Sprintf("echo: hello %d", i) {
				t.Errorf("session %d got %v %q", i, last.Kind, last.Text)
			}
			for _, ev := range evs {
				if ev.SessionID != s.ID() {
					t.Errorf("event of session %s delivered to %s", ev.SessionID, s.ID())
				}
			}
		})
	}
	wg.Wait()
	if n := len(srv.Requests()); n != 8 {
		t.Fatalf("%d model calls, want 8", n)
	}
}

// gate holds model responses until released, so a turn stays running.
type gate struct {
	started chan string
	release chan struct{}
}

func newGate(t *testing.T, srv *llmtest.Server) *gate {
	g := &gate{started: make(chan string, 16), release: make(chan struct{})}
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		msg := lastUser(r)
		g.started <- msg
		if strings.HasPrefix(msg, "slow") {
			<-g.release
		}
		return echo(r)
	})
	// Registered after the server: runs first, so held handlers end before it closes.
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	})
	return g
}

func TestMessageWhileTurnRunsIsQueuedAndAcknowledged(t *testing.T) {
	srv := llmtest.NewServer(t)
	g := newGate(t, srv)
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(SubscribeOptions{})
	defer sub.Close()
	first, _, _ := s.Send(context.Background(), "slow one", SendOptions{})
	<-g.started
	second, ack, err := s.Send(context.Background(), "two", SendOptions{})
	if err != nil || ack.Position != 1 || ack.Interrupted {
		t.Fatalf("ack %+v %v", ack, err)
	}
	if !s.Busy() {
		t.Fatal("session not busy while a turn runs")
	}
	close(g.release)
	evs := collect(t, sub, second.ID)
	var order []string
	for _, ev := range evs {
		switch ev.Kind {
		case Queued:
			order = append(order, "queued:"+ev.Text)
		case Final:
			order = append(order, ev.Text)
		}
	}
	want := []string{"queued:two", "echo: slow one", "echo: two"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Fatalf("order %q, want %q", order, want)
	}
	if res, err := first.Wait(context.Background()); err != nil || res.Text != "echo: slow one" {
		t.Fatalf("first: %+v %v", res, err)
	}
	if err := s.WaitIdle(context.Background()); err != nil || s.Busy() {
		t.Fatal("session still busy")
	}
}

func TestInterruptStopsRunningTurnAndAnswersNewMessage(t *testing.T) {
	srv := llmtest.NewServer(t)
	g := newGate(t, srv)
	rt := newTestRuntime(t, srv, nil)
	s, _ := rt.Open(context.Background(), OpenOptions{})
	first, _, _ := s.Send(context.Background(), "slow one", SendOptions{})
	<-g.started
	second, ack, _ := s.Send(context.Background(), "now this", SendOptions{Interrupt: true})
	if !ack.Interrupted || ack.Position != 1 {
		t.Fatalf("ack %+v", ack)
	}
	if _, err := first.Wait(context.Background()); err != agent.ErrCancelled {
		t.Fatalf("first turn: %v, want cancelled", err)
	}
	res, err := second.Wait(context.Background())
	if err != nil || res.Text != "echo: now this" {
		t.Fatalf("second: %+v %v", res, err)
	}
	// The interrupted turn gets no invented answer; the model sees both
	// prompts as one user message, so the conversation it gets alternates.
	reqs := srv.Requests()
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(body.Messages); i++ {
		if body.Messages[i].Role == "user" && body.Messages[i-1].Role == "user" {
			t.Fatalf("two user messages in a row sent to the model: %+v", body.Messages)
		}
	}
}

func TestCancelStopsTurnAndDropsQueue(t *testing.T) {
	srv := llmtest.NewServer(t)
	g := newGate(t, srv)
	rt := newTestRuntime(t, srv, nil)
	s, _ := rt.Open(context.Background(), OpenOptions{})
	first, _, _ := s.Send(context.Background(), "slow", SendOptions{})
	<-g.started
	queued, _, _ := s.Send(context.Background(), "later", SendOptions{})
	if !s.Cancel() {
		t.Fatal("Cancel found nothing to cancel")
	}
	for _, turn := range []*Turn{first, queued} {
		if _, err := turn.Wait(context.Background()); err != agent.ErrCancelled {
			t.Fatalf("%s: %v, want cancelled", turn.Text, err)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the queued message reached the model (%d calls)", n)
	}
}

// A subscriber that does not read while a turn streams gets the text
// deltas coalesced, past its bound dropped, and every tool event and the
// final answer in order.
func TestSlowSubscriberGetsMustDeliverEvents(t *testing.T) {
	long := strings.Repeat("abcdefghij", 200) // 2,000 bytes in 1-byte chunks
	srv := llmtest.NewServer(t)
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if lastRole(r) == "tool" {
			return llmtest.Turn{Text: long, ChunkSize: 1}
		}
		return llmtest.Turn{Text: "planning ", ChunkSize: 1, ToolCalls: []llmtest.Call{
			{Name: "todo", Args: `{"todos":[{"id":"1","content":"a","status":"pending"}]}`},
		}}
	})
	rt := newTestRuntime(t, srv, nil)
	s, _ := rt.Open(context.Background(), OpenOptions{})
	slow := s.Subscribe(SubscribeOptions{MaxPendingDeltaBytes: 500})
	fast := s.Subscribe(SubscribeOptions{MaxPendingDeltaBytes: -1})
	turn, _, _ := s.Send(context.Background(), "go", SendOptions{})
	fastEvs := collect(t, fast, turn.ID)
	if _, err := turn.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	slowEvs := collect(t, slow, turn.ID) // read only now: everything was pending
	must := func(evs []Event) []string {
		var out []string
		for _, ev := range evs {
			if !ev.Kind.Droppable() {
				out = append(out, ev.Kind.String())
			}
		}
		return out
	}
	want := "turn_start tool_start tool_end final"
	if got := strings.Join(must(slowEvs), " "); got != want {
		t.Fatalf("slow subscriber got %q, want %q", got, want)
	}
	if got := strings.Join(must(fastEvs), " "); got != want {
		t.Fatalf("fast subscriber got %q, want %q", got, want)
	}
	if slowEvs[len(slowEvs)-1].Text != long {
		t.Fatal("the final answer is not whole")
	}
	deltas := 0
	var text strings.Builder
	for _, ev := range slowEvs {
		if ev.Kind == TextDelta {
			deltas++
			text.WriteString(ev.Text)
		}
	}
	if deltas > 3 || slow.Dropped() == 0 || text.Len() > 500 {
		t.Fatalf("slow subscriber: %d delta events, %d bytes, %d dropped; want coalesced and bounded", deltas, text.Len(), slow.Dropped())
	}
	var all strings.Builder
	for _, ev := range fastEvs {
		if ev.Kind == TextDelta {
			all.WriteString(ev.Text)
		}
	}
	if all.String() != "planning "+long {
		t.Fatalf("unbounded subscriber lost text: %d bytes", all.Len())
	}
}

// chmodModel asks for a dangerous command, then answers with the tool result.
func chmodModel(r llmtest.Request) llmtest.Turn {
	if lastRole(r) == "tool" {
		var body struct {
			Messages []llmtest.ChatMessage `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &body)
		return llmtest.Turn{Text: "result: " + body.Messages[len(body.Messages)-1].Text()}
	}
	return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"chmod 777 x || true"}`}}}
}

func TestApprovalAskedToSessionSubscriberAndAnswered(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(chmodModel)
	rt := newTestRuntime(t, srv, nil)
	s, _ := rt.Open(context.Background(), OpenOptions{})
	sub := s.Subscribe(SubscribeOptions{Approver: true})
	defer sub.Close()
	turn, _, _ := s.Send(context.Background(), "open it up", SendOptions{})
	var asked *approval.Prompt
	for {
		ev, err := sub.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == ApprovalRequest {
			asked = ev.Approval
			if got := s.PendingApprovals(); len(got) != 1 || got[0].ID != asked.ID {
				t.Fatalf("pending %+v", got)
			}
			if !s.Approve("", approval.Once) {
				t.Fatal("Approve found no pending prompt")
			}
		}
		if ev.TurnID == turn.ID && (ev.Kind == Final || ev.Kind == Error) {
			break
		}
	}
	if asked == nil || asked.Tool != "terminal" || asked.Command != "chmod 777 x || true" || asked.SessionID != s.ID() {
		t.Fatalf("approval prompt %+v", asked)
	}
	res, _ := turn.Wait(context.Background())
	if strings.Contains(res.Text, "not run") {
		t.Fatalf("approved command was not run: %s", res.Text)
	}
}

func TestApprovalWithoutApproverOrAnswerDenies(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(chmodModel)
	rt := newTestRuntime(t, srv, nil)
	// Nobody attached to answer: decided at once, as a headless run.
	s, _ := rt.Open(context.Background(), OpenOptions{})
	turn, _, _ := s.Send(context.Background(), "x", SendOptions{})
	res, _ := turn.Wait(context.Background())
	if !strings.Contains(res.Text, "nobody can approve") {
		t.Fatalf("headless: %s", res.Text)
	}
}

func TestApprovalTimeoutDenies(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(chmodModel)
	rt := newTestRuntime(t, srv, func(o *Options) { o.Config.Config.Approvals.Timeout = 1 })
	s, _ := rt.Open(context.Background(), OpenOptions{})
	sub := s.Subscribe(SubscribeOptions{Approver: true}) // asks, never answers
	defer sub.Close()
	turn, _, _ := s.Send(context.Background(), "x", SendOptions{})
	res, _ := turn.Wait(context.Background())
	if !strings.Contains(res.Text, "approvals.timeout") {
		t.Fatalf("timeout: %s", res.Text)
	}
	evs := collect(t, sub, turn.ID)
	if !strings.Contains(kinds(evs), "approval_request") {
		t.Fatalf("no approval request among %s", kinds(evs))
	}
}

func TestKeyResumesSessionAcrossRuntimes(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newTestRuntime(t, srv, nil)
	s, _ := rt.Open(context.Background(), OpenOptions{Key: "telegram:dm:1", Source: "telegram"})
	turn, _, _ := s.Send(context.Background(), "remember me", SendOptions{})
	if _, err := turn.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	rt.Close()

	rt2, err := New(context.Background(), rt.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	s2, err := rt2.Open(context.Background(), OpenOptions{Key: "telegram:dm:1", Source: "telegram"})
	if err != nil || s2.ID() != id {
		t.Fatalf("resumed %v %v, want %s", s2, err, id)
	}
	if h := s2.History(); len(h) != 2 || h[0].Content != "remember me" {
		t.Fatalf("history %+v", h)
	}
	s3, _ := rt2.Open(context.Background(), OpenOptions{Key: "telegram:dm:1", New: true, Source: "telegram"})
	if s3.ID() == id {
		t.Fatal("/new kept the old session")
	}
	if s4, _ := rt2.Open(context.Background(), OpenOptions{Key: "telegram:dm:1"}); s4.ID() != s3.ID() {
		t.Fatal("the key does not name the new session")
	}
}

func TestIdleSessionsAreEvictedPastTheBound(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newTestRuntime(t, srv, func(o *Options) { o.MaxSessions = 2 })
	var ids []string
	for i := range 3 {
		s, _ := rt.Open(context.Background(), OpenOptions{Key: fmt.Sprint(i)})
		turn, _, _ := s.Send(context.Background(), fmt.Sprint("m", i), SendOptions{})
		turn.Wait(context.Background())
		ids = append(ids, s.ID())
	}
	if n := rt.Cached(); n != 2 {
		t.Fatalf("%d sessions cached, want 2", n)
	}
	if rt.lookup(ids[0]) != nil {
		t.Fatal("the least recently used session was kept")
	}
	s, err := rt.Open(context.Background(), OpenOptions{Key: "0"})
	if err != nil || s.ID() != ids[0] || len(s.History()) != 2 {
		t.Fatalf("evicted session did not reopen from the store: %v", err)
	}
}

func TestBusySessionIsNotEvicted(t *testing.T) {
	srv := llmtest.NewServer(t)
	g := newGate(t, srv)
	rt := newTestRuntime(t, srv, func(o *Options) { o.MaxSessions = 1 })
	busy, _ := rt.Open(context.Background(), OpenOptions{})
	turn, _, _ := busy.Send(context.Background(), "slow", SendOptions{})
	<-g.started
	other, _ := rt.Open(context.Background(), OpenOptions{})
	if rt.lookup(busy.ID()) == nil || rt.lookup(other.ID()) == nil {
		t.Fatal("a session with a running turn was evicted")
	}
	close(g.release)
	if _, err := turn.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	if err := rt.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// Regression: the answer used to be published while the turn still
// counted as running, so a message sent right after it was queued behind
// a finished turn ("Queued (1 ahead)").
func TestMessageAfterAnswerIsNotQueued(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newTestRuntime(t, srv, nil)
	s, _ := rt.Open(context.Background(), OpenOptions{})
	sub := s.Subscribe(SubscribeOptions{})
	defer sub.Close()
	for i := range 40 {
		turn, ack, err := s.Send(context.Background(), fmt.Sprint("m", i), SendOptions{})
		if err != nil || ack.Position != 0 {
			t.Fatalf("message %d sent after the previous answer: %+v %v", i, ack, err)
		}
		collect(t, sub, turn.ID)
	}
}

// Regression: a retried model call was announced to every session with a
// running turn, so one person saw another's provider errors. Only the
// session whose call is retried hears of it.
func TestRetryNoticeGoesOnlyToTheRetriedSession(t *testing.T) {
	srv := llmtest.NewServer(t)
	var failed atomic.Bool
	release := make(chan struct{})
	started := make(chan struct{})
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		switch msg := lastUser(r); msg {
		case "flaky":
			if !failed.Swap(true) {
				return llmtest.Turn{Status: 429, RetryAfter: "0", Error: "rate limited for user A"}
			}
		case "slow":
			close(started)
			<-release
		}
		return echo(r)
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	rt := newTestRuntime(t, srv, nil)
	ctx := context.Background()
	a, err := rt.Open(ctx, OpenOptions{Key: "chat:a", Source: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.Open(ctx, OpenOptions{Key: "chat:b", Source: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	subA, subB := a.Subscribe(SubscribeOptions{}), b.Subscribe(SubscribeOptions{})
	defer subA.Close()
	defer subB.Close()
	turnB, _, err := b.Send(ctx, "slow", SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	turnA, _, err := a.Send(ctx, "flaky", SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evA := collect(t, subA, turnA.ID)
	close(release)
	evB := collect(t, subB, turnB.ID)
	var sawRetry bool
	for _, ev := range evA {
		sawRetry = sawRetry || ev.Kind == Retry
	}
	if !sawRetry {
		t.Fatalf("session A's retried call gave no Retry event: %v", kinds(evA))
	}
	for _, ev := range evB {
		if ev.Kind == Retry {
			t.Fatalf("session B heard session A's retry: %q", ev.Text)
		}
	}
}
