package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

const (
	crashHelperDB      = "HERMES_STORE_CRASH_HELPER_DB"
	crashHelperSession = "HERMES_STORE_CRASH_HELPER_SESSION"
	crashHelperRun     = "HERMES_STORE_CRASH_HELPER_RUN"
	exitHelperDB       = "HERMES_STORE_EXIT_HELPER_DB"
)

// TestMain lets the test binary double as the crash helper: with
// HERMES_STORE_CRASH_HELPER_DB set it appends messages until killed.
func TestMain(m *testing.M) {
	if db := os.Getenv(crashHelperDB); db != "" {
		run, _ := strconv.Atoi(os.Getenv(crashHelperRun))
		os.Exit(runCrashHelper(db, os.Getenv(crashHelperSession), run))
	}
	if db := os.Getenv(exitHelperDB); db != "" {
		os.Exit(runExitHelper(db, os.Getenv(crashHelperSession), os.Getenv(crashHelperRun)))
	}
	os.Exit(m.Run())
}

// crashMessage is the i-th message a helper run writes: a user prompt, an
// assistant tool call, or its tool result, each with a unique search token.
func crashMessage(run, i int) llm.Message {
	token := fmt.Sprintf("r%dm%d", run, i)
	switch i % 3 {
	case 0:
		return llm.Message{Role: llm.RoleUser, Content: "please check " + token}
	case 1:
		return llm.Message{Role: llm.RoleAssistant, Content: "running " + token, Reasoning: "think " + token,
			ToolCalls: []llm.ToolCall{{ID: "call_" + token, Name: "terminal", Arguments: `{"command":"echo ` + token + `"}`}}}
	default:
		return llm.Message{Role: llm.RoleTool, ToolCallID: "call_" + fmt.Sprintf("r%dm%d", run, i-1), ToolName: "terminal",
			Content: "output " + token + strings.Repeat(" filler", i%50)}
	}
}

// runCrashHelper appends messages in a loop and prints "seq i" on stdout
// after each AppendMessage returns, i.e. once the message is acknowledged.
func runCrashHelper(db, session string, run int) int {
	st, err := Open(db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	for i := 0; i < 100000; i++ {
		seq, err := st.AppendMessage(ctx, session, crashMessage(run, i))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Printf("%d %d\n", seq, i)
		if i%5 == 4 {
			if err := st.AddUsage(ctx, session, llm.Usage{InputTokens: 10, OutputTokens: 1}, 1); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
	}
	return 0
}

type ack struct{ run, i int }

func TestCrashLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test starts and kills processes; skipped with -short")
	}
	path := filepath.Join(t.TempDir(), FileName)
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.CreateSession(context.Background(), NewSession{Source: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	seed := uint64(time.Now().UnixNano())
	t.Logf("kill points seeded with %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	acked := map[int64]ack{}
	const runs = 6
	for run := 0; run < runs; run++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperDB+"="+path, crashHelperSession+"="+s.ID, crashHelperRun+"="+strconv.Itoa(run))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 1 + rng.IntN(40)
		sc := bufio.NewScanner(out)
		lines := 0
		killed := false
		for sc.Scan() {
			var seq int64
			var i int
			if _, err := fmt.Sscanf(sc.Text(), "%d %d", &seq, &i); err != nil {
				t.Fatalf("helper printed %q", sc.Text())
			}
			if prev, dup := acked[seq]; dup {
				t.Fatalf("seq %d acknowledged twice (%v and run %d message %d)", seq, prev, run, i)
			}
			acked[seq] = ack{run, i}
			lines++
			if lines == killAfter && !killed {
				// Land the kill at a random point inside the next writes.
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		err = cmd.Wait()
		if !killed {
			t.Fatalf("helper run %d ended before it was killed: %v %s", run, err, stderr.String())
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("helper run %d did not die by SIGKILL: %v %s", run, err, stderr.String())
		}
	}

	st, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.CheckIntegrity(ctx); err != nil {
		t.Fatalf("after %d kills: %v", runs, err)
	}
	stored, err := st.StoredMessages(ctx, s.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	bySeq := map[int64]StoredMessage{}
	for i, m := range stored {
		if m.Seq != int64(i+1) {
			t.Fatalf("seq %d at position %d: the history has a gap", m.Seq, i+1)
		}
		bySeq[m.Seq] = m
	}
	for seq, a := range acked {
		m, ok := bySeq[seq]
		want := crashMessage(a.run, a.i)
		if !ok {
			t.Fatalf("acknowledged message seq %d (run %d #%d) lost", seq, a.run, a.i)
		}
		if m.Content != want.Content || m.Role != want.Role || len(m.ToolCalls) != len(want.ToolCalls) {
			t.Fatalf("seq %d = %+v, want %+v", seq, m.Message, want)
		}
	}
	sess, _ := st.Session(ctx, s.ID)
	if sess.MessageCount != len(stored) {
		t.Fatalf("message_count %d but %d rows: counters and rows disagree", sess.MessageCount, len(stored))
	}
	// The word index agrees with the rows: every stored message's token is found.
	for _, m := range stored {
		token := strings.Fields(m.Content)[1]
		hits, err := st.Search(ctx, SearchOptions{Query: token, SessionID: s.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			t.Fatalf("message %d (%q) is missing from the search index", m.Seq, token)
		}
	}
	t.Logf("%d kills, %d acknowledged, %d stored", runs, len(acked), len(stored))
}
