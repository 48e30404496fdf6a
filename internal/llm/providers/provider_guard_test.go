package providers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// Anthropic takes either an API key or an OAuth-style auth token; the
// error for a missing one names both variables.
func TestMissingAnthropicKeyNamesBothVariables(t *testing.T) {
	_, err := New(Options{Provider: "anthropic", Model: "m", Getenv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") || !strings.Contains(err.Error(), "ANTHROPIC_AUTH_TOKEN") {
		t.Fatalf("missing anthropic key: %v", err)
	}
}

// Recording into the file being replayed would truncate the script the
// run plays back; any spelling of the same path is refused and the file
// is left as it was.
func TestRecordOntoReplayIsRefused(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "live answer"})
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.jsonl")
	p, err := New(Options{Provider: "custom", Model: "m", BaseURL: srv.URL, RecordPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ask(t, p); err != nil {
		t.Fatal(err)
	}
	p.(interface{ Close() error }).Close()
	script, _ := os.ReadFile(path)
	if len(script) == 0 {
		t.Fatal("no recording written")
	}
	t.Chdir(dir)
	if err := os.Link(path, filepath.Join(dir, "hardlink.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, record := range []string{path, "rec.jsonl", "./sub/../rec.jsonl", filepath.Join(dir, ".", "rec.jsonl"), "hardlink.jsonl"} {
		_, err := New(Options{Provider: "replay", ReplayPath: path, RecordPath: record})
		if err == nil || !strings.Contains(err.Error(), "would overwrite the recording being replayed") {
			t.Errorf("--record %s --replay %s: %v", record, path, err)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != string(script) {
		t.Fatalf("the recording was changed: %q", got)
	}
	// A different file is fine.
	rp, err := New(Options{Provider: "replay", ReplayPath: path, RecordPath: filepath.Join(dir, "again.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	rp.(interface{ Close() error }).Close()
}

// config validates model.provider against its own list; it must be the
// list this package accepts.
func TestConfigProvidersMatchNames(t *testing.T) {
	if !slices.Equal(config.Providers(), Names()) {
		t.Fatalf("config.Providers() = %v, providers.Names() = %v", config.Providers(), Names())
	}
}
