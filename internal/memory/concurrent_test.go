package memory

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Environment of a writer child process (see TestMain).
const (
	writerDirEnv   = "HERMES_MEMORY_TEST_WRITER_DIR"
	writerIDEnv    = "HERMES_MEMORY_TEST_WRITER_ID"
	writerCountEnv = "HERMES_MEMORY_TEST_WRITER_COUNT"
)

// TestMain doubles as a writer process: re-executed with writerDirEnv set,
// the test binary adds writerCountEnv entries to that store and exits.
func TestMain(m *testing.M) {
	if dir := os.Getenv(writerDirEnv); dir != "" {
		id := os.Getenv(writerIDEnv)
		n, _ := strconv.Atoi(os.Getenv(writerCountEnv))
		s := NewStore(dir, 600, 0, nil)
		for i := range n {
			if _, err := s.Add(TargetMemory, entryText(id, i)); err != nil {
				fmt.Fprintln(os.Stderr, "writer", id, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func entryText(writer string, i int) string {
	return fmt.Sprintf("writer %s note %03d: something worth remembering", writer, i)
}

// checkNoneLost asserts every written entry is in MEMORY.md or in the
// archive, exactly once overall.
func checkNoneLost(t *testing.T, s *Store, writers []string, perWriter int) {
	t.Helper()
	st, err := s.State(TargetMemory)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := s.Archive()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range st.Entries {
		seen[e]++
	}
	for _, r := range recs {
		seen[r.Content]++
	}
	for _, w := range writers {
		for i := range perWriter {
			if c := seen[entryText(w, i)]; c != 1 {
				t.Errorf("entry %q found %d times (live %d, archived %d)", entryText(w, i), c, len(st.Entries), len(recs))
			}
		}
	}
	if st.Chars > st.Limit {
		t.Errorf("store over its limit: %d/%d", st.Chars, st.Limit)
	}
	if len(recs) == 0 {
		t.Error("the test should have forced evictions")
	}
}

func TestConcurrentProcessesLoseNoEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memories")
	const procs, perProc = 4, 15
	var writers []string
	var cmds []*exec.Cmd
	for p := range procs {
		id := fmt.Sprintf("p%d", p)
		writers = append(writers, id)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerDirEnv+"="+dir, writerIDEnv+"="+id, writerCountEnv+"="+strconv.Itoa(perProc))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	// This process writes at the same time through goroutines, each with its
	// own Store (own lock file descriptor).
	var wg sync.WaitGroup
	for g := range 2 {
		id := fmt.Sprintf("g%d", g)
		writers = append(writers, id)
		wg.Go(func() {
			s := NewStore(dir, 600, 0, nil)
			for i := range perProc {
				if _, err := s.Add(TargetMemory, entryText(id, i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}
	checkNoneLost(t, NewStore(dir, 600, 0, nil), writers, perProc)
}
