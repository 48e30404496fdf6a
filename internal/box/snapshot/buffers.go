package snapshot

import (
	"math/bits"
	"sync"
)

// bufferPool hands out reusable buffers for file contents on their
// way from the archive to an extraction worker, and bounds how many bytes
// are out at once: get blocks while the budget is spent and put returns
// it. Buffers come in power-of-two size classes from 4 KiB, so a restore
// of thousands of small files allocates (and zeroes) a few dozen buffers
// instead of one per file.
type bufferPool struct {
	mu      sync.Mutex
	cond    *sync.Cond
	budget  int        // bytes that may be out at once
	out     int        // bytes out now (by class size)
	classes [][][]byte // free buffers by size class
}

// bufferMinShift is the smallest class: 4 KiB.
const bufferMinShift = 12

func newBufferPool(budget int) bufferPool {
	return bufferPool{budget: budget}
}

// bufferClass returns the class index and size for n bytes.
func bufferClass(n int) (int, int) {
	shift := bufferMinShift
	if n > 1<<shift {
		shift = bits.Len(uint(n - 1))
	}
	return shift - bufferMinShift, 1 << shift
}

// get returns a buffer of length n (its contents are not zeroed), waiting
// while other buffers hold the budget; a buffer larger than the whole
// budget is handed out once nothing else is.
func (p *bufferPool) get(n int) []byte {
	class, size := bufferClass(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cond == nil {
		p.cond = sync.NewCond(&p.mu)
	}
	for p.out > 0 && p.out+size > p.budget {
		p.cond.Wait()
	}
	p.out += size
	if class < len(p.classes) {
		if free := p.classes[class]; len(free) > 0 {
			buf := free[len(free)-1]
			p.classes[class] = free[:len(free)-1]
			return buf[:n]
		}
	}
	return make([]byte, n, size)
}

// put gives buf, from get, back.
func (p *bufferPool) put(buf []byte) {
	class, size := bufferClass(cap(buf))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out -= size
	for len(p.classes) <= class {
		p.classes = append(p.classes, nil)
	}
	p.classes[class] = append(p.classes[class], buf[:0])
	p.cond.Broadcast()
}
