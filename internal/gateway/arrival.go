package gateway

import "sync"

// arrivals keeps each chat's messages in arrival order up to the point
// where they enter the session (per-chat FIFO): the adapter takes a
// ticket on the goroutine that reads the platform's updates, in the
// platform's order; the handler, on a goroutine of its own, waits for the
// chat's previous ticket before it opens the session and sends, then
// lets the next one go. Handlers still wait for answers concurrently.
type arrivals struct {
	mu   sync.Mutex
	last map[string]*arrival // chat → its newest ticket
}

// arrival is one message's place in its chat's queue.
type arrival struct {
	chat string
	prev <-chan struct{} // closed when the previous message entered the session; nil = none
	mine chan struct{}
	once sync.Once
	of   *arrivals
}

// take queues a message of chat behind the chat's earlier ones.
func (a *arrivals) take(chat string) *arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[string]*arrival{}
	}
	t := &arrival{chat: chat, mine: make(chan struct{}), of: a}
	if p := a.last[chat]; p != nil {
		t.prev = p.mine
	}
	a.last[chat] = t
	return t
}

// wait blocks until the chat's previous message entered the session (or
// its handler gave up).
func (t *arrival) wait() {
	if t.prev != nil {
		<-t.prev
	}
}

// release lets the chat's next message go; later calls do nothing.
func (t *arrival) release() {
	t.once.Do(func() {
		close(t.mine)
		a := t.of
		a.mu.Lock()
		if a.last[t.chat] == t {
			delete(a.last, t.chat)
		}
		a.mu.Unlock()
	})
}
