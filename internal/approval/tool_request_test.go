package approval

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestToolRequestAsksWithToolActionPath(t *testing.T) {
	s := New(Config{})
	var got Prompt
	s.Attach(PrompterFunc(func(_ context.Context, p Prompt) (Answer, error) { got = p; return Session, nil }))
	req := Request{SessionID: "s1", Tool: "write_file", Action: "write", Path: "/etc/hosts"}
	d, err := s.Request(context.Background(), req)
	if err != nil || !d.Allowed {
		t.Fatalf("got %+v %v", d, err)
	}
	if got.Tool != "write_file" || got.Action != "write" || got.Path != "/etc/hosts" || got.Command != "" {
		t.Fatalf("prompt %+v", got)
	}
	// A session answer covers the same tool and action on another path, in that session only.
	s.Attach(PrompterFunc(func(context.Context, Prompt) (Answer, error) { return Deny, nil }))
	if d, _ := s.Request(context.Background(), Request{SessionID: "s1", Tool: "write_file", Action: "write", Path: "/etc/x"}); !d.Allowed {
		t.Fatalf("session approval not applied: %+v", d)
	}
}

func TestToolRequestHeadlessAndTimeoutDeny(t *testing.T) {
	s := New(Config{Timeout: 20 * time.Millisecond})
	req := Request{SessionID: "s", Tool: "write_file", Action: "write", Path: "x"}
	if d, _ := s.Request(context.Background(), req); d.Allowed {
		t.Fatal("headless tool request allowed")
	}
	s.Attach(PrompterFunc(func(ctx context.Context, _ Prompt) (Answer, error) { <-ctx.Done(); return Deny, ctx.Err() }))
	if d, err := s.Request(context.Background(), req); d.Allowed || err != nil {
		t.Fatalf("timeout: %+v %v", d, err)
	}
}

func TestToolRequestSkippedInBox(t *testing.T) {
	s := New(Config{Isolated: true})
	if d, _ := s.Request(context.Background(), Request{Tool: "patch", Action: "write", Path: "x"}); !d.Allowed {
		t.Fatalf("got %+v", d)
	}
}

func TestNoPrompterErrorsCountAsHeadless(t *testing.T) {
	s := New(Config{})
	s.Attach(PrompterFunc(func(context.Context, Prompt) (Answer, error) { return Deny, ErrNoPrompter }))
	d, err := s.Request(context.Background(), Request{SessionID: "s", Command: "chmod 777 x"})
	if err != nil || d.Allowed || d.Reason == "" || !strings.Contains(d.Reason, "nobody can approve") {
		t.Fatalf("got %+v %v", d, err)
	}
}

// Two sessions (two chats of a gateway) are asked at the same time: one
// person's pending prompt does not hold up another's.
func TestSessionsPromptConcurrently(t *testing.T) {
	s := New(Config{})
	both := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	waiting := 0
	s.Attach(PrompterFunc(func(ctx context.Context, _ Prompt) (Answer, error) {
		mu.Lock()
		waiting++
		if waiting == 2 {
			once.Do(func() { close(both) })
		}
		mu.Unlock()
		select {
		case <-both:
			return Once, nil
		case <-ctx.Done():
			return Deny, ctx.Err()
		}
	}))
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		wg.Go(func() {
			if d, err := s.Request(context.Background(), Request{SessionID: id, Command: "chmod 777 x"}); err != nil || !d.Allowed {
				t.Errorf("%s: %+v %v", id, d, err)
			}
		})
	}
	wg.Wait()
}

// An action outside the box (an MCP server on the host) still asks with
// an isolated backend (terminal.backend: box); --yolo allows it.
func TestUncontainedToolRequestAsksInBox(t *testing.T) {
	s := New(Config{Isolated: true})
	req := Request{SessionID: "s", Tool: "mcp__gh__delete_repo", Action: "call", Path: "gh", Uncontained: true}
	if d, _ := s.Request(context.Background(), req); d.Allowed || !strings.Contains(d.Reason, "nobody can approve") {
		t.Fatalf("got %+v", d)
	}
	s.SetYolo(true)
	if d, _ := s.Request(context.Background(), req); !d.Allowed {
		t.Fatalf("yolo: %+v", d)
	}
}
