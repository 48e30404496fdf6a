package waitfor

import (
	"sync/atomic"
	"testing"
	"time"
)

// Until returns once the condition holds, however long it takes within
// the test's deadline.
func TestUntilWaitsForTheCondition(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 5 {
			time.Sleep(10 * time.Millisecond)
			n.Add(1)
		}
	}()
	Until(t, "five increments", func() bool { return n.Load() == 5 })
}

// The deadline is the test binary's, less a margin, never already past.
func TestDeadlineIsBeforeTheBinarysDeadline(t *testing.T) {
	d := Deadline(t)
	if bd, ok := t.Deadline(); ok && !d.Before(bd) {
		t.Errorf("Deadline %v is not before the binary's %v", d, bd)
	}
	if !d.After(time.Now()) {
		t.Errorf("Deadline %v has passed", d)
	}
}

// Recv returns the value sent.
func TestRecvReturnsTheValue(t *testing.T) {
	ch := make(chan int, 1)
	go func() { time.Sleep(10 * time.Millisecond); ch <- 7 }()
	if v := Recv(t, ch, "the value"); v != 7 {
		t.Errorf("Recv = %d", v)
	}
}
