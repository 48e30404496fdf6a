package sandboxserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/sandboxcatalog"
	"github.com/hermes-go/hermes/internal/sandboxserver"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
	"github.com/hermes-go/hermes/internal/testnet"
)

// fleetTokenFile writes a fleet token file for a test's nodes.
func fleetTokenFile(t *testing.T) string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "fleet-token")
	if err := os.WriteFile(tokenFile, []byte("fleet-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tokenFile
}

// startFleetNode starts node name of a fleet on the catalog at url and
// schema, accepting key, with extra flags.
func startFleetNode(t *testing.T, bin, name, url, schema, tokenFile, key string, extra ...string) *fleetNode {
	t.Helper()
	dir := t.TempDir()
	n := &fleetNode{name: name, api: testnet.FreeAddr(t), envd: testnet.FreeAddr(t), home: filepath.Join(dir, "home")}
	n.args = append([]string{"sandbox", "serve", "--api-addr", n.api, "--envd-addr", n.envd, "--workspace", filepath.Join(dir, "ws"),
		"--api-key", key, "--catalog", url, "--catalog-schema", schema, "--node", name, "--fleet-token-file", tokenFile,
		"--fleet-heartbeat", "1s"}, extra...)
	n.proc = startServerArgs(t, bin, n.home, n.api, n.args)
	return n
}

// TestSeed000ThroughTheFleet runs seed 000's SDK programs unchanged
// against a two-node fleet's endpoint (node A's addresses): node A is
// full (--max-sandboxes 1, one sandbox made first), so the seed's
// sandboxes are placed on node B and every call, envd's command streams
// included, goes through A to B. hermes runs in the box, talks to the
// fake model through the box's egress gate and answers; the skill made in
// run 1 is used in run 2.
func TestSeed000ThroughTheFleet(t *testing.T) {
	if raceEnabled {
		t.Skip("two node processes, the E2B SDK and hermes in boxes: run in the plain test run (the race detector checks no Go code of this process here)")
	}
	url, schema := postgrestest.Schema(t)
	node := needBoxesAndNode(t)
	bin := buildHermes(t)
	model := llmtest.NewServer(t)
	model.SetResponder(modelAnswers)
	addr := forward(t, hostIP(t), strings.TrimPrefix(strings.TrimSuffix(model.URL, "/v1"), "http://"))
	const key = "fleet-client-key-1"
	tokenFile := fleetTokenFile(t)
	shared := []string{"--env", "OPENROUTER_BASE_URL=http://" + addr + "/v1", "--allow", addr, "--node-cpu", "1000", "--node-memory-mb", "100000000"}
	a := startFleetNode(t, bin, "a", url, schema, tokenFile, key, append(shared, "--max-sandboxes", "1")...)
	b := startFleetNode(t, bin, "b", url, schema, tokenFile, key, append(shared, "--max-sandboxes", "10")...)

	req, _ := http.NewRequest("POST", "http://"+a.api+"/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("the sandbox that fills node A: %d", resp.StatusCode)
	}

	s := &served{apiURL: "http://" + a.api, envdURL: "http://" + a.envd, key: key}
	providerEnv := "OPENROUTER_API_KEY=sk-or-fake-for-tests"
	if out := s.node(t, node, "seed000_headless.mjs", providerEnv); !strings.Contains(out, "SCRIPTED: an empty E2B-style workspace.") {
		t.Fatalf("seed 000 through the fleet printed %q, want the scripted answer", out)
	}
	if out := s.node(t, node, "seed000_skill.mjs", providerEnv); !strings.Contains(out, "TRIAGED: checkout-43 caused the spike") {
		t.Fatalf("seed 000's second run through the fleet printed %q, want the answer made with the incident-triage skill", out)
	}
	// The seed's sandboxes ran on B: A's log shows it placed them there.
	if placed := strings.Count(a.proc.log.String(), `msg="sandbox placed on another node"`); placed < 2 || !strings.Contains(a.proc.log.String(), "node=b") {
		t.Fatalf("node A placed %d sandboxes on B; want the seed's (at least 2)", placed)
	}
	cat, err := sandboxcatalog.OpenPostgres(context.Background(), url, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if recs, err := cat.List(context.Background(), "a"); err != nil || len(recs) != 1 {
		t.Fatalf("node A holds %d sandboxes (%v); want only the one that fills it", len(recs), err)
	}
	if made := strings.Count(b.proc.log.String(), `msg="sandbox created"`); made < 2 {
		t.Fatalf("node B created %d sandboxes; want the seed's 2", made)
	}
}

// TestFleetOutlivesACatalogOutage cuts two node processes off their
// PostgreSQL catalog while a sandbox of node B runs: through node A the
// E2B JS SDK still connects to it, runs a command and writes and reads a
// file (A routes from its owner cache), and a create through A is refused
// with E2B's error saying the catalog cannot be reached.
func TestFleetOutlivesACatalogOutage(t *testing.T) {
	dbURL, schema := postgrestest.Schema(t)
	node := needBoxesAndNode(t)
	bin := buildHermes(t)
	url, cut := sandboxserver.LinkTo(t, dbURL)
	const key = "fleet-client-key-1"
	tokenFile := fleetTokenFile(t)
	shared := []string{"--node-cpu", "1000", "--node-memory-mb", "100000000"}
	a := startFleetNode(t, bin, "a", url, schema, tokenFile, key, append(shared, "--max-sandboxes", "1")...)
	startFleetNode(t, bin, "b", url, schema, tokenFile, key, append(shared, "--max-sandboxes", "10")...)
	s := &served{apiURL: "http://" + a.api, envdURL: "http://" + a.envd, key: key}
	env := []string{"A_API=http://" + a.api, "A_ENVD=http://" + a.envd}
	// Two sandboxes through A: the first fills A, the second is B's.
	out := s.node(t, node, "fleet.mjs", append(env, "B_API=http://"+a.api, "B_ENVD=http://"+a.envd, "C_API=http://"+a.api, "C_ENVD=http://"+a.envd, "N=2")...)
	var made struct{ IDs []string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &made); err != nil || len(made.IDs) != 2 {
		t.Fatalf("fleet.mjs printed %q: %v", out, err)
	}
	cat, err := sandboxcatalog.OpenPostgres(context.Background(), dbURL, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	onB, err := cat.List(context.Background(), "b")
	if err != nil || len(onB) != 1 {
		t.Fatalf("node B holds %d sandboxes (%v), want 1", len(onB), err)
	}
	cut()
	out = s.node(t, node, "fleet_outage.mjs", append(env, "ID="+onB[0].ID)...)
	if !strings.Contains(out, "outage ok") {
		t.Fatalf("during the outage: %s", out)
	}
	t.Logf("%s", out)
}
