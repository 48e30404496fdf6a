package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// codeTurns scripts a model that calls execute_code with script, then
// answers "done".
func codeTurns(t *testing.T, script string) *llmtest.Server {
	b, _ := json.Marshal(map[string]string{"code": script})
	return llmtest.NewServer(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "c1", Name: "execute_code", Args: string(b)}}},
		llmtest.Turn{Text: "done"})
}

// threeCallScript writes, reads and lists a file through hermes_tools
// and reports whether any RPC socket directory is left in the temp dir
// while it runs (there must be none: the runner removes it once hermes is
// in).
const threeCallScript = `import os, tempfile
from hermes_tools import write_file, read_file, terminal
write_file("rpc-note.txt", "from the script\n")
r = read_file("rpc-note.txt")
t = terminal("cat rpc-note.txt; hostname")
print("read ok:", "from the script" in str(r))
print("terminal:", t["output"].split("\n"))
print("sockets left:", [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("hermes-rpc-")])`

// TestExecuteCodeInTheBox: with terminal.backend box the script runs in
// the box (its hostname) and its three tool calls act on the box's
// workspace; no socket directory is left in the box.
func TestExecuteCodeInTheBox(t *testing.T) {
	c := newBoxCLI(t)
	srv := codeTurns(t, threeCallScript)
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + srv.URL + "\n" +
		"terminal:\n  backend: box\n  cwd: " + c.ws + "\n  container_memory: 256\n  container_disk: 64\n" +
		"compression:\n  enabled: false\nauxiliary:\n  title_generation:\n    enabled: false\n"
	if err := os.WriteFile(filepath.Join(c.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(c.home, "skills"), 0o755)
	os.WriteFile(filepath.Join(c.home, "skills", ".no-bundled-skills"), nil, 0o644)
	out, errOut, code := c.run(t, "", "-z", "use the script")
	if code != 0 || strings.TrimSpace(out) != "done" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	body := string(reqs[1].Body)
	for _, want := range []string{`read ok: True`, `from the script`, `hermes-box`, `sockets left: []`, `\"tool_calls_made\": 3`, `\"status\": \"success\"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("the model did not read %s:\n%s", want, body)
		}
	}
	if data, err := os.ReadFile(filepath.Join(c.ws, "rpc-note.txt")); err != nil || string(data) != "from the script\n" {
		t.Fatalf("workspace file: %q %v", data, err)
	}
}

// TestExecuteCodeLocal: with the local backend a script that only calls
// tools needs no approval of its own, even in a one-shot run (its calls
// are checked one by one), and its three calls act on the workspace.
func TestExecuteCodeLocal(t *testing.T) {
	srv := codeTurns(t, `from hermes_tools import write_file, read_file, terminal
write_file("rpc-note.txt", "from the script\n")
r = read_file("rpc-note.txt")
t = terminal("cat rpc-note.txt")
print("read ok:", "from the script" in str(r))
print("terminal:", t["output"].strip())`)
	ta := clarifyApp(t, srv, "", false)
	ta.App.Environ = func() []string { return []string{"PATH=/usr/local/bin:/usr/bin:/bin"} }
	if code := ta.run("-z", "use the script"); code != 0 || strings.TrimSpace(ta.stdout.String()) != "done" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, ta.stdout, ta.stderr)
	}
	body := string(srv.Requests()[1].Body)
	for _, want := range []string{`read ok: True`, `terminal: from the script`, `\"tool_calls_made\": 3`, `\"status\": \"success\"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("the model did not read %s:\n%s", want, body)
		}
	}
}
