package mcp

import (
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
)

// A box-run stdio server that fails to start says it ran in the box and
// how to run it on the host (a host path gave only "No such file or
// directory").
func TestBoxRunServerStartErrorNamesTheBoxAndHost(t *testing.T) {
	err := inBoxHint("files", config.MCPServer{Command: "/home/me/mcp/server.py"},
		errors.New("calling initialize: EOF; its stderr (/tmp/hermes-mcp-files.log in the box) ends: exec: /home/me/mcp/server.py: No such file or directory"))
	for _, want := range []string{"No such file or directory", "run inside the box", `"/home/me/mcp/server.py"`, "hermes mcp add files --host", "mcp_servers.files.host: true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
}
