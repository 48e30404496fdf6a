package session

import "context"

// AskOptions configure one Ask: the subscription it reads the turn's
// events from and how the message is sent.
type AskOptions struct {
	Subscribe SubscribeOptions
	Send      SendOptions
	// Sending, when set, runs the send: it calls send (Session.Send with
	// the text and Send) and returns its results, so a face can hold its
	// own lock around the send, note the turn's place or acknowledge the
	// message (the gateway's per-chat order and "Queued" reply). Ask
	// returns Sending's error.
	Sending func(send func() (*Turn, Ack, error)) (*Turn, Ack, error)
}

// Ask sends text as a turn and calls on (when non-nil) with each event of
// that turn in order, until the turn's last event, Final or Error, which
// it returns instead of passing to on: "subscribe, send, wait for Final",
// the loop of every face that answers one message (the CLI, the API
// server, ACP). The subscription is made before the send, so no event of
// the turn is missed; events of other turns are skipped. on runs on the
// caller's goroutine and may answer what it is shown (Approve, Answer,
// Decline): the turn waits for that answer.
//
// Every turn ends with Final or Error, also when ctx ends (then an Error
// event with Cancelled set), so the events are read without ctx's
// cancellation. The error is Send's (ErrClosed) or the subscription's;
// a turn that failed is an Error event with a nil error.
func (s *Session) Ask(ctx context.Context, text string, o AskOptions, on func(Event)) (Event, error) {
	sub := s.Subscribe(o.Subscribe)
	defer sub.Close()
	send := func() (*Turn, Ack, error) { return s.Send(ctx, text, o.Send) }
	if o.Sending == nil {
		o.Sending = func(send func() (*Turn, Ack, error)) (*Turn, Ack, error) { return send() }
	}
	turn, _, err := o.Sending(send)
	if err != nil {
		return Event{}, err
	}
	for {
		ev, err := sub.Next(context.WithoutCancel(ctx))
		if err != nil {
			return Event{}, err
		}
		if ev.TurnID != turn.ID {
			continue
		}
		if ev.Kind == Final || ev.Kind == Error {
			return ev, nil
		}
		if on != nil {
			on(ev)
		}
	}
}
