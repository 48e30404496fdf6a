package llm

// EventQueue buffers the events of a Stream implementation whose wire
// chunks each turn into zero or more events (one SSE chunk may carry text,
// a tool-call delta and usage). Embed it, Push events while reading a chunk,
// and implement Next with Advance.
type EventQueue struct {
	queue []Event
	cur   Event
}

// Push appends ev to the queue.
func (q *EventQueue) Push(ev Event) { q.queue = append(q.queue, ev) }

// Advance makes the next queued event current, calling pull to read more
// chunks while the queue is empty. pull returns false at the end of the
// stream or on error; Advance then returns false once the queue is drained.
func (q *EventQueue) Advance(pull func() bool) bool {
	for len(q.queue) == 0 {
		if !pull() && len(q.queue) == 0 {
			return false
		}
	}
	q.cur, q.queue = q.queue[0], q.queue[1:]
	return true
}

// Event returns the current event (Stream.Event).
func (q *EventQueue) Event() Event { return q.cur }
