package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Attacker trial on issue 23: .hermes/ is writable by a box or a guarded
// command whenever it did not exist when the box started (the usual case),
// so a command can plant thousands of project skills. Every later session
// in that directory then carries all of them in its system prompt: 30,000
// planted skills gave a 2 MB system prompt (every model request pays for
// it, or fails on the context window). Project context files are cut to
// 20,000 characters; the project skills' share of the prompt needs a bound
// too.
func TestProjectSkillIndexIsBounded(t *testing.T) {
	w := newProjectWorld(t)
	desc := strings.Repeat("D", 190)
	for i := range 3000 {
		dir := filepath.Join(w.skills(), fmt.Sprintf("s%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("---\nname: s%d\ndescription: %s\n---\nbody\n", i, desc)
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx := w.library().Index()
	if n := len(idx); n > 100_000 {
		t.Fatalf("the skill index of a planted .hermes/skills is %d bytes; it must be bounded", n)
	}
	if !strings.Contains(idx, "2900 more skills are not listed") {
		t.Errorf("the index does not say what it left out: ...%s", idx[max(0, len(idx)-200):])
	}
}
