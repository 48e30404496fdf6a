package main

import (
	"os/exec"
	"strings"
	"testing"
)

// forbiddenInitDeps are module paths (prefixes) the box init must not
// link: provider SDKs, the TUI, databases, chat platforms, MCP/ACP; and
// what only the host side of a box needs: the configuration (YAML), the
// egress gate, the backends, images and snapshots (zstd, gzip, tar), the
// box's host package. Each costs package inits and memory in every box's
// PID 1.
var forbiddenInitDeps = []string{
	"github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go",
	"charm.land/", "github.com/charmbracelet/", "modernc.org/sqlite", "database/sql",
	"github.com/jackc/pgx", "github.com/modelcontextprotocol/go-sdk", "github.com/coder/acp-go-sdk",
	"connectrpc.com/connect", "github.com/spf13/cobra", "github.com/go-telegram/bot",
	"github.com/bwmarrin/discordgo", "github.com/slack-go/slack",
	"github.com/hermes-go/hermes/internal/llm", "github.com/hermes-go/hermes/internal/store",
	"github.com/hermes-go/hermes/internal/tui", "github.com/hermes-go/hermes/internal/cli",
	"github.com/hermes-go/hermes/internal/config", "go.yaml.in/yaml", "gopkg.in/yaml",
	"github.com/hermes-go/hermes/internal/egress", "github.com/hermes-go/hermes/internal/backend",
	"github.com/klauspost/compress", "compress/", "archive/", "net/http", "crypto/tls",
	"github.com/hermes-go/hermes/internal/box/image", "github.com/hermes-go/hermes/internal/box/snapshot",
}

// hostBoxPackage is internal/box itself (the host side): the init links
// only box/initproc and box/wire below it.
const hostBoxPackage = "github.com/hermes-go/hermes/internal/box"

// TestInitLinksNoSDK lists the init's dependencies with `go list -deps`
// and fails on any forbidden one.
func TestInitLinksNoSDK(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain on PATH to list the init's dependencies")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if d == hostBoxPackage {
			t.Errorf("hermes-box-init links %s (the host side of a box: use box/initproc and box/wire)", d)
		}
		for _, f := range forbiddenInitDeps {
			if d == f || strings.HasPrefix(d, f) {
				t.Errorf("hermes-box-init links %s (forbidden: %s)", d, f)
			}
		}
	}
}
