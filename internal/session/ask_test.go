package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// Ask returns the turn's Final event, shows on the turn's own events only
// (not those of a turn queued by someone else meanwhile), and lets on
// answer an approval the turn waits for.
func TestAskReturnsFinalAndShowsOnlyItsTurn(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(chmodModel)
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []Event
	var other string
	last, err := s.Ask(waitfor.Context(t), "open it up", AskOptions{Subscribe: SubscribeOptions{Approver: true}}, func(ev Event) {
		seen = append(seen, ev)
		switch ev.Kind {
		case TurnStart:
			turn, _, err := s.Send(context.Background(), "meanwhile", SendOptions{}) // queued behind this one
			if err != nil {
				t.Error(err)
			} else {
				other = turn.ID
			}
		case ApprovalRequest:
			s.Approve(ev.Approval.ID, approval.Once)
		}
	})
	if err != nil || last.Kind != Final || strings.Contains(last.Text, "not run") || last.Result.Text != last.Text {
		t.Fatalf("Ask = %+v, %v", last, err)
	}
	var approvals int
	for _, ev := range seen {
		if ev.TurnID != last.TurnID || ev.Kind == Final || ev.Kind == Error {
			t.Errorf("on was shown %v of turn %s (Ask's turn is %s, the other %s)", ev.Kind, ev.TurnID, last.TurnID, other)
		}
		if ev.Kind == ApprovalRequest {
			approvals++
		}
	}
	if approvals != 1 || other == "" || seen[0].Kind != TurnStart {
		t.Errorf("events %v: want the turn's start and one approval request", kinds(seen))
	}
	if err := s.WaitIdle(waitfor.Context(t)); err != nil {
		t.Fatal(err)
	}
}

// A cancelled Ask still ends with the turn's Error event; Ask on a closed
// session is Send's error.
func TestAskCancelledAndClosed(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	last, err := s.Ask(ctx, "never", AskOptions{}, nil)
	if err != nil || last.Kind != Error || !last.Cancelled {
		t.Fatalf("cancelled Ask = %+v, %v", last, err)
	}
	s.Close()
	if _, err := s.Ask(context.Background(), "late", AskOptions{}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ask on a closed session = %v", err)
	}
}

// AskOptions.Sending runs the send: it sees the message's Ack (its queue
// place) before any event of the turn, and its error is Ask's.
func TestAskSendingWrapsTheSend(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ack Ack
	var events int
	last, err := s.Ask(waitfor.Context(t), "hello", AskOptions{
		Sending: func(send func() (*Turn, Ack, error)) (*Turn, Ack, error) {
			if events != 0 {
				t.Error("an event was shown before the send")
			}
			turn, a, err := send()
			ack = a
			return turn, a, err
		},
	}, func(Event) { events++ })
	if err != nil || last.Kind != Final || ack.TurnID != last.TurnID {
		t.Fatalf("Ask = %+v, %v; Sending saw %+v", last, err, ack)
	}
	refused := errors.New("refused by the face")
	_, err = s.Ask(waitfor.Context(t), "again", AskOptions{
		Sending: func(func() (*Turn, Ack, error)) (*Turn, Ack, error) { return nil, Ack{}, refused },
	}, nil)
	if !errors.Is(err, refused) {
		t.Fatalf("Ask with a refusing Sending = %v", err)
	}
}
