package sandboxserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// fleetNode is one node server of a fleet test.
type fleetNode struct {
	name, api, envd, home string
	args                  []string
	proc                  *serverProcess
}

// fleetSandboxes is how many sandboxes TestFleetThreeNodes makes:
// HERMES_FLEET_SANDBOXES (a multiple of 6; issue 29's proof is 60), else 6,
// what a loaded 2-core CI machine affords.
func fleetSandboxes(t *testing.T) int {
	v := os.Getenv("HERMES_FLEET_SANDBOXES")
	if v == "" {
		return 6
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n%6 != 0 {
		t.Fatalf("HERMES_FLEET_SANDBOXES=%q: want a positive multiple of 6", v)
	}
	return n
}

// TestFleetThreeNodes is issue 29's fleet proof on one machine: three node
// servers (own HERMES_HOMEs, loopback ports) on one PostgreSQL catalog,
// with room for N/3, 2N/3 and N sandboxes. The E2B JS SDK creates N
// sandboxes (fleetSandboxes) through node A only, and through B and C runs
// commands, writes and reads files, lists, pauses and resumes; placement
// spreads them by capacity (N/6, N/3 and N/2: every node half full). Then
// kill -9 of node C: its sandboxes, running and paused, answer an error
// naming node C (503, not a hang) once its heartbeat is 3 s old, the
// others keep working; when C is back, so are its sandboxes, the paused
// ones included, with their files.
func TestFleetThreeNodes(t *testing.T) {
	total := fleetSandboxes(t)
	url, schema := postgrestest.Schema(t)
	node := needBoxesAndNode(t)
	bin := buildHermes(t)
	const key = "fleet-client-key-1"
	tokenFile := fleetTokenFile(t)
	nodes := map[string]*fleetNode{}
	room := map[string]int{"a": total / 3, "b": 2 * total / 3, "c": total}
	for _, name := range []string{"a", "b", "c"} {
		nodes[name] = startFleetNode(t, bin, name, url, schema, tokenFile, key,
			"--node-cpu", "1000", "--node-memory-mb", "100000000", "--max-sandboxes", strconv.Itoa(room[name]))
	}
	if strings.Contains(nodes["a"].proc.log.String(), "fleet-token-0123") {
		t.Fatal("a node logged the fleet token")
	}
	env := []string{}
	for name, n := range nodes {
		up := strings.ToUpper(name)
		env = append(env, up+"_API=http://"+n.api, up+"_ENVD=http://"+n.envd)
	}
	s := &served{apiURL: "http://" + nodes["a"].api, envdURL: "http://" + nodes["a"].envd, key: key}
	began := time.Now()
	out := s.node(t, node, "fleet.mjs", append(env, "N="+strconv.Itoa(total))...)
	var made struct{ IDs, Paused []string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &made); err != nil || len(made.IDs) != total {
		t.Fatalf("fleet.mjs printed %q: %v", out, err)
	}
	t.Logf("%d sandboxes created through A, used through B and C, paused and resumed: %s", total, time.Since(began).Round(time.Millisecond))
	ids := made.IDs

	cat, err := sandboxcatalog.OpenPostgres(context.Background(), url, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	owner := map[string]string{}
	for name := range nodes {
		recs, err := cat.List(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if want := room[name] / 2; len(recs) != want {
			t.Errorf("node %s (room for %d) holds %d sandboxes; want %d of the %d (least loaded share first)", name, room[name], len(recs), want, total)
		}
		for _, r := range recs {
			owner[r.ID] = name
		}
	}
	var lost, kept, lostPaused []string
	for _, id := range ids {
		if owner[id] == "c" {
			lost = append(lost, id)
		} else {
			kept = append(kept, id)
		}
	}
	for _, id := range made.Paused {
		if owner[id] == "c" {
			lostPaused = append(lostPaused, id)
		}
	}
	if len(lostPaused) == 0 {
		// Which sandboxes landed on C is up to the race of the creates:
		// pause one of C's through B, so that one paused is lost with C.
		id := lost[0]
		req, _ := http.NewRequest("POST", "http://"+nodes["b"].api+"/sandboxes/"+id+"/pause", nil)
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("pause %s through B: %d", id, resp.StatusCode)
		}
		lostPaused = append(lostPaused, id)
	}
	t.Logf("node C holds %d sandboxes, %d of them paused", len(lost), len(lostPaused))

	killed := time.Now()
	nodes["c"].proc.stop(t, syscall.SIGKILL)
	// Within the heartbeat bound (3 s) node C is down: A answers its
	// sandboxes with the node-down error without trying C.
	if !waitfor.Poll(t, func() bool {
		req, _ := http.NewRequest("GET", "http://"+nodes["a"].api+"/sandboxes/"+lost[0], nil)
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		var body struct{ Message string }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body.Message, "node c, which is down")
	}) {
		t.Fatal("node C was not marked down")
	}
	t.Logf("node C answered as down %s after kill -9 (heartbeat 1 s, down after 3 s)", time.Since(killed).Round(time.Millisecond))
	out = s.node(t, node, "fleet_after.mjs", append(env, "LOST="+strings.Join(lost, ","), "KEPT="+strings.Join(kept, ","))...)
	if !strings.Contains(out, "fleet ok") {
		t.Fatalf("after node C's loss: %s", out)
	}
	t.Logf("%s", out)

	// Node C comes back: its sandboxes (running or paused when it died) run
	// again, with their files, reached through B.
	c := nodes["c"]
	c.proc = startServerArgs(t, bin, c.home, c.api, c.args)
	out = s.node(t, node, "fleet_after.mjs", append(env, "KEPT="+strings.Join(lost, ","))...)
	if !strings.Contains(out, "fleet ok") {
		t.Fatalf("after node C came back: %s", out)
	}
}
