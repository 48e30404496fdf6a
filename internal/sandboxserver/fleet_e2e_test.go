package sandboxserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// fleetNode is one node server of a fleet test.
type fleetNode struct {
	name, api, envd, home string
	args                  []string
	proc                  *serverProcess
}

// TestFleetThreeNodes is issue 29's fleet proof on one machine: three node
// servers (own HERMES_HOMEs, loopback ports) on one PostgreSQL catalog.
// The E2B JS SDK creates sandboxes through node A only, and through B and
// C runs commands, writes and reads files, lists, pauses and resumes;
// placement spreads them over the nodes. Then kill -9 of node C: its
// sandboxes answer an error naming node C (503, not a hang), the others
// keep working; when C is back, so are its sandboxes.
func TestFleetThreeNodes(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	node := needBoxesAndNode(t)
	bin := buildHermes(t)
	const key = "fleet-client-key-1"
	tokenFile := filepath.Join(t.TempDir(), "fleet-token")
	if err := os.WriteFile(tokenFile, []byte("fleet-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]*fleetNode{}
	for _, name := range []string{"a", "b", "c"} {
		dir := t.TempDir()
		n := &fleetNode{name: name, api: testnet.FreeAddr(t), envd: testnet.FreeAddr(t)}
		args := []string{"sandbox", "serve", "--api-addr", n.api, "--envd-addr", n.envd, "--workspace", filepath.Join(dir, "ws"),
			"--api-key", key, "--catalog", url, "--catalog-schema", schema, "--node", name, "--fleet-token-file", tokenFile,
			"--node-cpu", "16", "--node-memory-mb", "1000000", "--max-sandboxes", "10", "--fleet-heartbeat", "1s"}
		n.home, n.args = filepath.Join(dir, "home"), args
		n.proc = startServerArgs(t, bin, n.home, n.api, args)
		nodes[name] = n
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
	out := s.node(t, node, "fleet.mjs", append(env, "N=6")...)
	var ids []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &ids); err != nil || len(ids) != 6 {
		t.Fatalf("fleet.mjs printed %q: %v", out, err)
	}

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
		if len(recs) != 2 {
			t.Errorf("node %s holds %d sandboxes; want 2 of the 6 (least loaded first)", name, len(recs))
		}
		for _, r := range recs {
			owner[r.ID] = name
		}
	}
	var lost, kept []string
	for _, id := range ids {
		if owner[id] == "c" {
			lost = append(lost, id)
		} else {
			kept = append(kept, id)
		}
	}

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
	out = s.node(t, node, "fleet_after.mjs", append(env, "LOST="+strings.Join(lost, ","), "KEPT="+strings.Join(kept, ","))...)
	if !strings.Contains(out, "fleet ok") {
		t.Fatalf("after node C's loss: %s", out)
	}
	t.Logf("%s", out)

	// Node C comes back: its sandboxes (running when it died) run again,
	// with their files, reached through B.
	c := nodes["c"]
	c.proc = startServerArgs(t, bin, c.home, c.api, c.args)
	out = s.node(t, node, "fleet_after.mjs", append(env, "KEPT="+strings.Join(lost, ","))...)
	if !strings.Contains(out, "fleet ok") {
		t.Fatalf("after node C came back: %s", out)
	}
}
