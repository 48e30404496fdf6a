package store

import (
	"sync"
	"time"
)

// checkpointEvery is how often the background checkpoint looks for new
// commits to copy from the WAL into the database.
const checkpointEvery = 500 * time.Millisecond

// walTruncatePages is the WAL size (in pages) past which a checkpoint also
// truncates the WAL file, so a busy gateway's WAL does not stay large.
const walTruncatePages = 4096

// startCheckpoints runs SQLite's WAL checkpoint in the background every
// interval while there were commits since the last one. Automatic
// checkpoints are off (wal_autocheckpoint(0) in Open): SQLite would run
// one inside the commit that crossed 1,000 WAL pages, fsyncing the WAL and
// the database while that commit (and, through the write slot, every other
// writer of the process) waited; under disk load that was up to 150 ms a
// time. PASSIVE neither waits for nor blocks writers and readers. The
// returned func stops the loop and waits for it.
func (s *SQLite) startCheckpoints(interval time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		var seen int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if n := s.commits.Load(); n != seen {
				seen = n
				s.checkpoint()
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// checkpoint copies committed WAL frames into the database (PASSIVE), and
// truncates the WAL when it has grown past walTruncatePages and every frame
// could be copied. Errors are ignored: the next round tries again, and the
// data is safe in the WAL meanwhile.
func (s *SQLite) checkpoint() {
	var busy, logPages, done int
	if err := s.db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &done); err != nil {
		return
	}
	if busy == 0 && logPages >= walTruncatePages && done == logPages {
		_, _ = s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	}
}
