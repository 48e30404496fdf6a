package llmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// Cassette is one go-vcr (version 2) recording of real provider traffic
// from ../shared/fixtures/llm-cassettes: Name is its path relative to
// that directory (for example "TestOpenAICommon/openai-gpt-4o/tool_streaming.yaml").
type Cassette struct {
	Name         string
	Interactions []Interaction `yaml:"interactions"`
}

// Interaction is one recorded request and its response.
type Interaction struct {
	Request struct {
		Body   string `yaml:"body"`
		URL    string `yaml:"url"`
		Method string `yaml:"method"`
	} `yaml:"request"`
	Response struct {
		Body    string              `yaml:"body"`
		Code    int                 `yaml:"code"`
		Headers map[string][]string `yaml:"headers"`
	} `yaml:"response"`
}

// Streaming reports whether the recorded request asked for a stream.
func (i Interaction) Streaming() bool {
	return strings.Contains(i.Request.Body, `"stream":true`)
}

// Anthropic reports whether the request went to the Anthropic Messages API.
func (i Interaction) Anthropic() bool { return strings.HasSuffix(i.Request.URL, "/v1/messages") }

// CassetteDir returns the shared cassette directory, found by walking up from
// the working directory to the module root (the directory holding go.mod)
// and taking ../shared/fixtures/llm-cassettes; "" when absent.
func CassetteDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			c := filepath.Join(dir, "..", "shared", "fixtures", "llm-cassettes")
			if st, err := os.Stat(c); err == nil && st.IsDir() {
				return c
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Cassettes loads every *.yaml cassette, skipping the test when the
// directory is absent. A cassette that does not parse fails the test.
func Cassettes(t testing.TB) []Cassette {
	t.Helper()
	dir := CassetteDir()
	if dir == "" {
		t.Skip("../shared/fixtures/llm-cassettes not found next to the repository; cassette tests skipped")
	}
	var out []Cassette
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var c Cassette
		if err := yaml.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		c.Name, _ = filepath.Rel(dir, path)
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Skipf("no cassettes in %s", dir)
	}
	return out
}
