package gateway

import (
	"strings"
	"testing"
)

func TestSplitMessageKeepsFencesAndLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("Here is the code:\n```go\n")
	for i := 0; b.Len() < 9000; i++ {
		b.WriteString("fmt.Println(\"line of code number\", 12345) // 😀 emoji counts twice\n")
	}
	b.WriteString("```\nDone.")
	text := b.String()
	parts := SplitMessage(text, 4096)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	var joined strings.Builder
	for i, p := range parts {
		if n := utf16Len(p); n > 4096 {
			t.Fatalf("part %d is %d UTF-16 units", i+1, n)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Fatalf("part %d leaves a fence open:\n%s", i+1, p)
		}
		suffix := "\n(" + itoa(i+1) + "/" + itoa(len(parts)) + ")"
		if !strings.HasSuffix(p, suffix) {
			t.Fatalf("part %d lacks %q", i+1, suffix)
		}
		body := strings.TrimSuffix(p, suffix)
		if i > 0 {
			body = strings.TrimPrefix(body, "```go\n")
		}
		if i < len(parts)-1 {
			body = strings.TrimSuffix(body, "\n```") + "\n"
		}
		joined.WriteString(body)
	}
	if joined.String() != text {
		t.Fatal("the parts do not add up to the text")
	}
}

func TestSplitMessageShortAndLongLine(t *testing.T) {
	if p := SplitMessage("hi", 4096); len(p) != 1 || p[0] != "hi" {
		t.Fatalf("%q", p)
	}
	long := strings.Repeat("ж", 5000)
	parts := SplitMessage(long, 4096)
	if len(parts) != 2 || utf16Len(parts[0]) > 4096 {
		t.Fatalf("%d parts", len(parts))
	}
}
