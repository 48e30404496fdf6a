package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/skills/bundled"
)

// /skills with no skills installed (the user opted out of the bundled
// ones with skills/.no-bundled-skills) names a command that exists:
// `hermes skills create`, not an install command hermes lacks.
func TestSkillsHintWithNoSkills(t *testing.T) {
	w := newWorldIn(t, func(home string) {
		if err := os.MkdirAll(filepath.Join(home, "skills"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "skills", bundled.OptOut), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}, llmtest.Turn{Text: "unused"})
	tm, out := start(t, w.options(t), 80, 24)
	send(tm, "/skills")
	out.wait(t, "no skills installed")
	out.wait(t, "--description TEXT`")
	// The printer sends a few rows per frame and the live region is
	// repainted between them, so the wrapped hint is checked in pieces.
	s := strings.Join(strings.Fields(out.String()), " ")
	if !strings.Contains(s, "run `hermes skills") || !strings.Contains(s, "create NAME --description TEXT`") || strings.Contains(s, "hermes skills install") {
		t.Errorf("/skills does not name `hermes skills create`:\n%s", out.String())
	}
}
