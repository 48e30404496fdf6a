package session

import (
	"fmt"
	"sync"
	"testing"
)

// Keys set at once by many chats (one write covers several of them) are
// all in the file when set returns: a restarted gateway finds every chat.
func TestKeyIndexConcurrentSetsAllPersisted(t *testing.T) {
	home := t.TempDir()
	k := newKeyIndex(home)
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = k.set(fmt.Sprint("telegram:", i), fmt.Sprint("id-", i)) })
	}
	wg.Wait()
	reloaded := newKeyIndex(home)
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("set %d: %v", i, errs[i])
		}
		if got := reloaded.get(fmt.Sprint("telegram:", i)); got != fmt.Sprint("id-", i) {
			t.Fatalf("key %d reads %q after a restart", i, got)
		}
	}
}
