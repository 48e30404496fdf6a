package sandboxcatalog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// A fleet: every node of hermes sandbox serve on one PostgreSQL catalog
// registers itself (Register) and renews its heartbeat (Heartbeat); a
// node whose heartbeat is older than the fleet's bound is down. Any node
// places a new sandbox (Place) and forwards the create to the node chosen.

// Node is one server of a fleet as the catalog keeps it.
type Node struct {
	// Name is the node's name (hermes sandbox serve --node).
	Name string
	// APIAddr and EnvdAddr are the addresses other nodes reach its E2B
	// API and envd at (host:port).
	APIAddr, EnvdAddr string
	// CPU is the vCPUs and MemoryMB the memory (MiB) it gives sandboxes;
	// MaxSandboxes bounds its sandboxes, running and paused.
	CPU          int
	MemoryMB     int64
	MaxSandboxes int
	// Heartbeat is when the node last said it was up.
	Heartbeat time.Time
	// Running, Paused and Placing count its sandboxes (read by Nodes and
	// Place): placing ones are being created.
	Running, Paused, Placing int
}

// Up reports whether n's heartbeat is at most bound old at now.
func (n Node) Up(now time.Time, bound time.Duration) bool { return now.Sub(n.Heartbeat) <= bound }

// Need is what one running sandbox takes of a node.
type Need struct {
	CPU      int
	MemoryMB int64
}

// fits reports whether n has room for one more sandbox of need: fewer
// sandboxes (all states, placing included) than MaxSandboxes, and the
// running and placing ones' vCPUs and memory plus need within CPU and
// MemoryMB.
func (n Node) fits(need Need) bool {
	active := n.Running + n.Placing
	return n.Running+n.Paused+n.Placing < n.MaxSandboxes &&
		(active+1)*need.CPU <= n.CPU && int64(active+1)*need.MemoryMB <= n.MemoryMB
}

// load is n's share of its sandbox slots in use (0..1).
func (n Node) load() float64 {
	return float64(n.Running+n.Paused+n.Placing) / float64(max(n.MaxSandboxes, 1))
}

// NoRoomError is Place's answer when no node that is up fits the need.
type NoRoomError struct {
	Need Need
	Up   int // nodes up
}

func (e *NoRoomError) Error() string {
	return fmt.Sprintf("no node has %d vCPU / %d MiB free for another sandbox (%d nodes up); kill or pause a sandbox, or add a node",
		e.Need.CPU, e.Need.MemoryMB, e.Up)
}

// Register inserts or updates n (its heartbeat set to now).
func (c *Postgres) Register(ctx context.Context, n Node, now time.Time) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.pool.Exec(ctx, c.expand(`INSERT INTO {schema}.sandbox_nodes (name, api_addr, envd_addr, cpu, memory_mb, max_sandboxes, heartbeat_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (name) DO UPDATE SET api_addr = EXCLUDED.api_addr,
		envd_addr = EXCLUDED.envd_addr, cpu = EXCLUDED.cpu, memory_mb = EXCLUDED.memory_mb,
		max_sandboxes = EXCLUDED.max_sandboxes, heartbeat_at = EXCLUDED.heartbeat_at`),
		n.Name, n.APIAddr, n.EnvdAddr, n.CPU, n.MemoryMB, n.MaxSandboxes, now.UnixNano())
	if err != nil {
		return fmt.Errorf("sandbox catalog %s: register node %s: %w", c.where, n.Name, err)
	}
	return nil
}

// Heartbeat renews node's heartbeat to now; a node that is not registered
// is an error.
func (c *Postgres) Heartbeat(ctx context.Context, node string, now time.Time) error {
	if err := c.check(); err != nil {
		return err
	}
	tag, err := c.pool.Exec(ctx, c.expand(`UPDATE {schema}.sandbox_nodes SET heartbeat_at = $2 WHERE name = $1`), node, now.UnixNano())
	if err == nil && tag.RowsAffected() == 0 {
		err = errors.New("not registered")
	}
	if err != nil {
		return fmt.Errorf("sandbox catalog %s: heartbeat of node %s: %w", c.where, node, err)
	}
	return nil
}

const nodesQuery = `SELECT n.name, n.api_addr, n.envd_addr, n.cpu, n.memory_mb, n.max_sandboxes, n.heartbeat_at,
	(SELECT count(*) FROM {schema}.sandboxes s WHERE s.node = n.name AND s.state = 'running'),
	(SELECT count(*) FROM {schema}.sandboxes s WHERE s.node = n.name AND s.state = 'paused'),
	(SELECT count(*) FROM {schema}.sandbox_placements p WHERE p.node = n.name
		AND NOT EXISTS (SELECT 1 FROM {schema}.sandboxes s WHERE s.id = p.id))
	FROM {schema}.sandbox_nodes n ORDER BY n.name`

// Nodes returns every registered node with its sandbox counts, by name.
func (c *Postgres) Nodes(ctx context.Context) ([]Node, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	nodes, err := scanNodes(c.pool.Query(ctx, c.expand(nodesQuery)))
	if err != nil {
		return nil, fmt.Errorf("sandbox catalog %s: nodes: %w", c.where, err)
	}
	return nodes, nil
}

func scanNodes(rows pgx.Rows, err error) ([]Node, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		var n Node
		var hb int64
		if err := rows.Scan(&n.Name, &n.APIAddr, &n.EnvdAddr, &n.CPU, &n.MemoryMB, &n.MaxSandboxes, &hb,
			&n.Running, &n.Paused, &n.Placing); err != nil {
			return nil, err
		}
		n.Heartbeat = time.Unix(0, hb)
		out = append(out, n)
	}
	return out, rows.Err()
}

// Place chooses the node for new sandbox id and reserves its room until
// Placed(id) (or the sandbox's record replaces the reservation). The rule:
// among the nodes up at now (heartbeat within bound) that fit need, the
// least loaded (lowest share of MaxSandboxes in use); on a tie, prefer
// (the node the client asked), then the first by name. Placing is one
// transaction holding the row locks of every node (SELECT … FOR UPDATE),
// so two nodes placing at once see each other's reservations: capacity is
// never booked twice. No node fitting is a *NoRoomError.
func (c *Postgres) Place(ctx context.Context, id string, need Need, prefer string, now time.Time, bound time.Duration) (Node, error) {
	if err := c.check(); err != nil {
		return Node{}, err
	}
	var chosen Node
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, c.expand(`SELECT name FROM {schema}.sandbox_nodes ORDER BY name FOR UPDATE`)); err != nil {
			return err
		}
		nodes, err := scanNodes(tx.Query(ctx, c.expand(nodesQuery)))
		if err != nil {
			return err
		}
		var fit []Node
		up := 0
		for _, n := range nodes {
			if n.Up(now, bound) {
				up++
				if n.fits(need) {
					fit = append(fit, n)
				}
			}
		}
		if len(fit) == 0 {
			return &NoRoomError{Need: need, Up: up}
		}
		sort.SliceStable(fit, func(i, j int) bool {
			if li, lj := fit[i].load(), fit[j].load(); li != lj {
				return li < lj
			}
			return fit[i].Name == prefer && fit[j].Name != prefer
		})
		chosen = fit[0]
		_, err = tx.Exec(ctx, c.expand(`INSERT INTO {schema}.sandbox_placements (id, node, cpu, memory_mb, placed_at) VALUES ($1, $2, $3, $4, $5)`),
			id, chosen.Name, need.CPU, need.MemoryMB, now.UnixNano())
		return err
	})
	var noRoom *NoRoomError
	if errors.As(err, &noRoom) {
		return Node{}, err
	}
	if err != nil {
		return Node{}, fmt.Errorf("sandbox catalog %s: place sandbox %s: %w", c.where, id, err)
	}
	chosen.Placing++
	return chosen, nil
}

// Placed drops the reservation of id (its create ended, made or not).
func (c *Postgres) Placed(ctx context.Context, id string) error {
	if err := c.check(); err != nil {
		return err
	}
	if _, err := c.pool.Exec(ctx, c.expand(`DELETE FROM {schema}.sandbox_placements WHERE id = $1`), id); err != nil {
		return fmt.Errorf("sandbox catalog %s: drop the placement of %s: %w", c.where, id, err)
	}
	return nil
}

// Node returns the registered node name with its sandbox counts (one
// row: routing asks it for every request to another node's sandbox); ok
// is false when there is none.
func (c *Postgres) Node(ctx context.Context, name string) (n Node, ok bool, err error) {
	if err := c.check(); err != nil {
		return Node{}, false, err
	}
	nodes, err := scanNodes(c.pool.Query(ctx, c.expand(strings.Replace(nodesQuery, "ORDER BY n.name", "WHERE n.name = $1", 1)), name))
	if err != nil {
		return Node{}, false, fmt.Errorf("sandbox catalog %s: node %s: %w", c.where, name, err)
	}
	if len(nodes) == 0 {
		return Node{}, false, nil
	}
	return nodes[0], true, nil
}
