package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

// BenchmarkOpenWithWAL measures Open and a first read of a database whose
// last run left a WAL of about the given size (WithExitAfterClose): the
// next run reads that WAL back (recovery) before its first query. The
// 0 KiB case is a database that was checkpointed at close.
func BenchmarkOpenWithWAL(b *testing.B) {
	for _, kib := range []int{0, 256, 1024, 2048} {
		b.Run(fmt.Sprintf("wal=%dKiB", kib), func(b *testing.B) {
			tmpl := b.TempDir()
			id := leaveWAL(b, tmpl, int64(kib)<<10)
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				for _, name := range []string{FileName, FileName + "-wal"} {
					if data, err := os.ReadFile(filepath.Join(tmpl, name)); err == nil {
						if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StartTimer()
				st, err := Open(filepath.Join(dir, FileName))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := st.Session(ctx, id); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				st.Close()
				b.StartTimer()
			}
		})
	}
}

// leaveWAL writes sessions into dir's state.db until its WAL holds at
// least walBytes, and returns a session id. The copy of state.db and its
// WAL (without -shm) that the benchmark opens is what a run leaving its
// WAL behind leaves.
func leaveWAL(b *testing.B, dir string, walBytes int64) string {
	st, err := Open(filepath.Join(dir, FileName), WithExitAfterClose())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := st.CreateSession(ctx, NewSession{})
	if err != nil {
		b.Fatal(err)
	}
	if walBytes == 0 {
		st.exitAfterClose = false
		st.Close()
		return s.ID
	}
	// Checkpoint the session row into the database so the WAL holds only
	// the appends below.
	if _, err := st.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	m := llm.Message{Role: llm.RoleTool, ToolName: "read_file", Content: "alpha\nbeta\ngamma\n"}
	for {
		fi, err := os.Stat(filepath.Join(dir, FileName+"-wal"))
		if err == nil && fi.Size() >= walBytes {
			break
		}
		if _, err := st.AppendMessage(ctx, s.ID, m); err != nil {
			b.Fatal(err)
		}
	}
	st.stopCheckpoints()
	return s.ID
}
