package backend

import (
	"fmt"
	"sync"
)

// Capture is a concurrency-safe output buffer bounded in memory: it keeps
// the first headMax bytes and a ring of the last tailMax bytes, and counts
// what fell in between. Output past the head is what a person needs most
// (the error at the end), so the tail is always kept.
type Capture struct {
	mu      sync.Mutex
	headMax int
	tailMax int
	head    []byte
	tail    []byte // ring buffer once full
	start   int    // index of the oldest byte in tail when full
	dropped int64  // bytes dropped between head and tail
	total   int64
}

// NewCapture returns a Capture keeping headMax and tailMax bytes.
func NewCapture(headMax, tailMax int) *Capture {
	return &Capture{headMax: headMax, tailMax: tailMax}
}

// Write never fails.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(c.tail) < c.tailMax {
			k := min(c.tailMax-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			continue
		}
		if c.tailMax == 0 {
			c.dropped += int64(len(p))
			break
		}
		// Ring full: overwrite the oldest bytes.
		if len(p) >= c.tailMax {
			c.dropped += int64(c.tailMax) + int64(len(p)-c.tailMax)
			copy(c.tail, p[len(p)-c.tailMax:])
			c.start = 0
			break
		}
		for _, b := range p {
			c.tail[c.start] = b
			c.start = (c.start + 1) % c.tailMax
			c.dropped++
		}
		break
	}
	return n, nil
}

// Bytes returns the kept output; when bytes were dropped, a one-line marker
// stands where they were.
func (c *Capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]byte, 0, len(c.head)+len(c.tail)+80)
	out = append(out, c.head...)
	if c.dropped > 0 {
		out = append(out, fmt.Sprintf("\n[... %d bytes of output dropped from memory ...]\n", c.dropped)...)
	}
	out = append(out, c.tail[c.start:]...)
	out = append(out, c.tail[:c.start]...)
	return out
}

// Total is the number of bytes written so far.
func (c *Capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}
