package sandboxcatalog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
)

func fleetCatalog(t *testing.T) *sandboxcatalog.Postgres {
	url, schema := postgrestest.Schema(t)
	c := openPostgres(t, url, schema)
	t.Cleanup(func() { c.Close() })
	return c
}

func node(name string, slots int) sandboxcatalog.Node {
	return sandboxcatalog.Node{Name: name, APIAddr: "127.0.0.1:1", EnvdAddr: "127.0.0.1:2", CPU: 8, MemoryMB: 8192, MaxSandboxes: slots}
}

var need = sandboxcatalog.Need{CPU: 1, MemoryMB: 512}

// A node whose heartbeat is older than the bound is down, and is never
// chosen; a heartbeat brings it back.
func TestFleetHeartbeat(t *testing.T) {
	ctx := context.Background()
	c := fleetCatalog(t)
	t0 := time.Unix(1_800_000_000, 0)
	for _, n := range []string{"a", "b"} {
		if err := c.Register(ctx, node(n, 10), t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Heartbeat(ctx, "a", t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.Heartbeat(ctx, "nobody", t0); err == nil {
		t.Fatal("a heartbeat of an unregistered node succeeded")
	}
	now, bound := t0.Add(25*time.Second), 15*time.Second
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 2 || !nodes[0].Up(now, bound) || nodes[1].Up(now, bound) {
		t.Fatalf("nodes %+v, %v: want a up, b down", nodes, err)
	}
	for i := range 3 {
		n, err := c.Place(ctx, fmt.Sprint("s", i), need, "b", now, bound)
		if err != nil || n.Name != "a" {
			t.Fatalf("placed on %q, %v: want a (b is down)", n.Name, err)
		}
	}
}

// Least loaded first; on a tie the node asked; none fitting is a
// NoRoomError naming the need.
func TestFleetPlacementRule(t *testing.T) {
	ctx := context.Background()
	c := fleetCatalog(t)
	now := time.Unix(1_800_000_000, 0)
	c.Register(ctx, node("a", 4), now)
	c.Register(ctx, node("b", 4), now)
	rec := func(id, n string) sandboxcatalog.Record {
		return sandboxcatalog.Record{ID: id, Task: "sbx-" + id, Node: n, Tenant: "local", Template: "base", State: "running", StartedAt: now, EndAt: now}
	}
	c.Put(ctx, rec("x1", "a"))
	if n, err := c.Place(ctx, "p1", need, "a", now, time.Minute); err != nil || n.Name != "b" {
		t.Fatalf("placed on %q, %v: want b, the least loaded", n.Name, err)
	}
	// a: 1 sandbox, b: 1 placing: a tie, the node asked wins.
	if n, err := c.Place(ctx, "p2", need, "a", now, time.Minute); err != nil || n.Name != "a" {
		t.Fatalf("placed on %q, %v: want a (a tie, and asked)", n.Name, err)
	}
	big := sandboxcatalog.Need{CPU: 4, MemoryMB: 8192}
	var noRoom *sandboxcatalog.NoRoomError
	if _, err := c.Place(ctx, "p3", big, "a", now, time.Minute); !errors.As(err, &noRoom) || noRoom.Up != 2 {
		t.Fatalf("a sandbox of 4 vCPU / 8 GiB on nodes with 8 GiB in use: %v", err)
	}
	if err := c.Placed(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	nodes, _ := c.Nodes(ctx)
	if nodes[0].Running != 1 || nodes[0].Placing != 1 || nodes[1].Placing != 0 {
		t.Fatalf("counts after Placed: %+v", nodes)
	}
}

// Two fronts placing at once never book the same room twice: 12 places
// race for 5 slots over two nodes; exactly 5 succeed.
func TestFleetNoDoubleBooking(t *testing.T) {
	ctx := context.Background()
	c := fleetCatalog(t)
	now := time.Unix(1_800_000_000, 0)
	c.Register(ctx, node("a", 2), now)
	c.Register(ctx, node("b", 3), now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	placed := map[string]int{}
	for i := range 12 {
		wg.Go(func() {
			n, err := c.Place(ctx, fmt.Sprint("r", i), need, "a", now, time.Minute)
			var noRoom *sandboxcatalog.NoRoomError
			if err != nil && !errors.As(err, &noRoom) {
				t.Error(err)
			}
			mu.Lock()
			placed[n.Name]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if placed["a"] != 2 || placed["b"] != 3 || placed[""] != 7 {
		t.Fatalf("placements %v: want a 2, b 3, 7 refused", placed)
	}
}
