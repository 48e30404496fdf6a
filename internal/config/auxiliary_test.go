package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// auxiliary: loads Hermes's keys (title_generation, compression, vision,
// the alias auxiliary.title, the legacy compression.summary_*),
// keeps Hermes's other tasks as known-but-unused, and `config check`
// reports a misspelt task key, an unknown provider, a provider without
// its key and a bad base URL, naming the key.
func TestAuxiliaryKeysAndProblems(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.yaml"), `model:
  provider: custom
  base_url: http://localhost:1/v1
compression:
  summary_model: old-summariser
auxiliary:
  title:
    model: tiny
    language: en
  vision:
    provider: openrouterr
    base_url: ftp://x
  approval:
    model: judge
  curator:
    provider: auto
  compression:
    timeout: 60
  bogus_task:
    model: x
`)
	l, err := Load(home, LoadOptions{Getenv: mapEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if got := c.Aux(AuxTitle).Model; got != "tiny" {
		t.Errorf("auxiliary.title.model (alias of title_generation) = %q", got)
	}
	if got := c.Aux(AuxCompression); got.Model != "old-summariser" || got.Timeout != 60 {
		t.Errorf("compression settings from the legacy key = %+v", got)
	}
	if !slices.Contains(l.UnknownKeys, "auxiliary.bogus_task") {
		t.Errorf("auxiliary.bogus_task is not reported unknown: %v", l.UnknownKeys)
	}
	for _, k := range []string{"auxiliary.approval", "auxiliary.curator", "auxiliary.title_generation.language"} {
		if !slices.Contains(l.Unimplemented, k) {
			t.Errorf("%s is not a known Hermes key: unimplemented %v, unknown %v", k, l.Unimplemented, l.UnknownKeys)
		}
	}
	got := strings.Join(l.Problems(), "\n")
	for _, want := range []string{`auxiliary.vision.provider: unknown provider "openrouterr"`, `auxiliary.vision.base_url: "ftp://x" is not an http(s) URL`} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	writeFile(t, filepath.Join(home, "config.yaml"), "auxiliary:\n  title_generation:\n    modle: x\n")
	if _, err := Load(home, LoadOptions{Getenv: mapEnv(nil)}); err == nil || !strings.Contains(err.Error(), `did you mean "auxiliary.title_generation.model"`) {
		t.Errorf("a misspelt task key: %v", err)
	}
	writeFile(t, filepath.Join(home, "config.yaml"), "model:\n  provider: custom\n  base_url: http://localhost:1/v1\nauxiliary:\n  compression:\n    provider: anthropic\n")
	l, err = Load(home, LoadOptions{Getenv: mapEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Problems(), "\n"); !strings.Contains(got, "auxiliary.compression.provider") || !strings.Contains(got, "ANTHROPIC_API_KEY") {
		t.Errorf("a provider without its key is not reported: %s", got)
	}
}
