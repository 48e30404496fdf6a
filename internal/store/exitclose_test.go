package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

// runExitHelper is a one-shot run: it opens the store WithExitAfterClose,
// appends one message and its answer with usage, closes and exits.
func runExitHelper(db, session, run string) int {
	st, err := Open(db, WithExitAfterClose())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	if _, err := st.AppendMessage(ctx, session, llm.Message{Role: llm.RoleUser, Content: "question " + run}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	answer := llm.Message{Role: llm.RoleAssistant, Content: "answer " + run}
	if _, err := st.AppendMessageUsage(ctx, session, answer, llm.Usage{InputTokens: 10}, 1); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := st.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// Runs that leave their WAL to the next one (WithExitAfterClose, as every
// CLI run does) lose nothing: each run's messages are there for the next
// run and after, found by search, and the database is consistent.
func TestExitAfterCloseLeavesWALToNextRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.CreateSession(context.Background(), NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	const runs = 5
	for run := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), exitHelperDB+"="+path, crashHelperSession+"="+s.ID, crashHelperRun+"="+strconv.Itoa(run))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: %v %s", run, err, out)
		}
		fi, err := os.Stat(path + "-wal")
		if err != nil || fi.Size() == 0 {
			t.Fatalf("after run %d the WAL is gone (%v): the run checkpointed at exit", run, err)
		}
	}
	st, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.CheckIntegrity(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Messages(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2*runs || msgs[2*runs-1].Content != fmt.Sprintf("answer %d", runs-1) {
		t.Fatalf("%d messages after %d runs, last %+v; want %d", len(msgs), runs, msgs[len(msgs)-1], 2*runs)
	}
	sess, err := st.Session(ctx, s.ID)
	if err != nil || sess.APICallCount != runs || sess.MessageCount != 2*runs {
		t.Fatalf("session %+v, %v: counters lost", sess, err)
	}
	hits, err := st.Search(ctx, SearchOptions{Query: "answer", SessionID: s.ID, Limit: 50})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search after the runs: %d hits, %v", len(hits), err)
	}
}

// A WAL past walKeepBytes is checkpointed at Close as without the option,
// so the WAL the next run reads back stays bounded.
func TestExitAfterCloseCheckpointsLargeWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	st, err := Open(path, WithExitAfterClose())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := st.CreateSession(ctx, NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	big := llm.Message{Role: llm.RoleTool, ToolName: "read_file", Content: strings.Repeat("spilled output line\n", 3000)}
	for {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() >= walKeepBytes {
			break
		}
		if _, err := st.AppendMessage(ctx, s.ID, big); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
		t.Fatalf("WAL of %d+ bytes still there after Close (%v); want it checkpointed and removed", walKeepBytes, err)
	}
}
