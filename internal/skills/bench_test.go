package skills

import (
	"fmt"
	"testing"
)

// BenchmarkIndex measures rendering the system-prompt index from disk for
// 200 skills in 10 categories (done once per session).
func BenchmarkIndex(b *testing.B) {
	dir := b.TempDir()
	for i := range 200 {
		name := fmt.Sprintf("skill-%03d", i)
		writeSkillFile(b, dir, fmt.Sprintf("cat-%d/%s/SKILL.md", i%10, name), skillMD(name, "does thing number "+name, "# body\n"))
	}
	lib := NewLibrary(Root{Dir: dir, Kind: Local})
	for b.Loop() {
		if lib.Index() == "" {
			b.Fatal("empty index")
		}
	}
}
