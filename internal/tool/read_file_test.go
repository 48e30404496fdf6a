package tool

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestReadFileNumberedLines(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, "a.txt", "alpha\r\nbeta\ngamma")
	r := run(t, NewReadFileTool(f.opts), `{"path": "a.txt"}`)
	if r.IsError || r.Content != "     1|alpha\n     2|beta\n     3|gamma\n" {
		t.Fatalf("got %q", r.Content)
	}
}

func TestReadFileOffsetLimitAndPaging(t *testing.T) {
	f := newFileFixture(t)
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	f.write(t, "big.txt", b.String())
	tl := NewReadFileTool(f.opts)
	r := run(t, tl, `{"path": "big.txt"}`)
	if !strings.HasPrefix(r.Content, "     1|line 1\n") || !strings.Contains(r.Content, "   500|line 500\n") || strings.Contains(r.Content, "|line 501") ||
		!strings.Contains(r.Content, "Showing lines 1-500 of 3000. Use offset=501") {
		t.Fatalf("default window wrong: ...%s", r.Content[len(r.Content)-120:])
	}
	r = run(t, tl, `{"path": "big.txt", "offset": 2999, "limit": 10}`)
	if r.Content != "  2999|line 2999\n  3000|line 3000\n" {
		t.Fatalf("got %q", r.Content)
	}
	r = run(t, tl, `{"path": "big.txt", "limit": 5000}`)
	if strings.Contains(r.Content, "|line 2001\n") || !strings.Contains(r.Content, "|line 2000\n") {
		t.Fatal("limit must be capped at 2000")
	}
	if r := run(t, tl, `{"path": "big.txt", "offset": 4000}`); !r.IsError || !strings.Contains(r.Content, "past the end") {
		t.Fatalf("got %+v", r)
	}
}

func TestReadFileLongLinesAndCharCap(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, "long.txt", strings.Repeat("é", 2500)+"\nshort\n")
	r := run(t, NewReadFileTool(f.opts), `{"path": "long.txt"}`)
	if !strings.Contains(r.Content, strings.Repeat("é", 2000)+"... [line cut: 500 more characters]") || !strings.Contains(r.Content, "2|short") {
		t.Fatalf("got %q", r.Content[len(r.Content)-80:])
	}
	opts := f.opts
	opts.MaxReadChars = 100
	f.write(t, "many.txt", strings.Repeat("0123456789\n", 50))
	r = run(t, NewReadFileTool(opts), `{"path": "many.txt"}`)
	if len(r.Content) > 200 || !strings.Contains(r.Content, "Use offset=") {
		t.Fatalf("char cap ignored: %q", r.Content)
	}
}

func TestReadFileErrors(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, "config.yaml", "a: 1\n")
	f.write(t, "bin.dat", "ab\x00cd")
	f.write(t, "sub/x.txt", "x")
	tl := NewReadFileTool(f.opts)
	for args, want := range map[string]string{
		`{"path": "confg.yaml"}`:      "Did you mean: " + f.dir + "/config.yaml",
		`{"path": "Config.YAML"}`:     "config.yaml",
		`{"path": "nodir/x.txt"}`:     "does not exist either",
		`{"path": "bin.dat"}`:         "binary file",
		`{"path": "sub"}`:             "is a directory",
		`{"path": "/dev/zero"}`:       "not a regular file",
		`{}`:                          "path is required",
		``:                            "path is required",
		`{"path": "a", "offset": -2}`: "offset must be",
		`[1]`:                         "invalid arguments",
	} {
		if r := run(t, tl, args); !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("%s: want %q, got %+v", args, want, r)
		}
	}
}

func TestReadFileEncodings(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, "u16.txt", "\xff\xfeh\x00i\x00\n\x00")
	f.write(t, "bad.txt", "ok \xff\xfe end\n")
	f.write(t, "empty.txt", "")
	tl := NewReadFileTool(f.opts)
	if r := run(t, tl, `{"path": "u16.txt"}`); r.Content != "     1|hi\n" {
		t.Fatalf("utf-16: %q", r.Content)
	}
	if r := run(t, tl, `{"path": "bad.txt"}`); r.Content != "     1|ok \uFFFD end\n" {
		t.Fatalf("invalid utf-8: %q", r.Content)
	}
	if r := run(t, tl, `{"path": "empty.txt"}`); r.IsError || !strings.Contains(r.Content, "empty") {
		t.Fatalf("empty: %+v", r)
	}
}

// A file above the size cap is refused before it is loaded, with the ways
// to read part of it; the default cap is 64 MiB.
func TestReadFileRefusesHugeFiles(t *testing.T) {
	f := newFileFixture(t)
	huge := f.write(t, "huge.log", "")
	if err := os.Truncate(huge, DefaultMaxReadFileBytes+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	r := run(t, NewReadFileTool(f.opts), `{"path": "huge.log", "offset": 10, "limit": 5}`)
	for _, want := range []string{"huge.log", "67108865 bytes", "sed -n 'START,ENDp'", "tail", "head", "search_files"} {
		if !r.IsError || !strings.Contains(r.Content, want) {
			t.Fatalf("want an error naming %q, got %+v", want, r)
		}
	}

	opts := f.opts
	opts.MaxReadFileBytes = 12
	tl := NewReadFileTool(opts)
	f.write(t, "at-cap.txt", "12345678901\n")
	if r := run(t, tl, `{"path": "at-cap.txt"}`); r.IsError || r.Content != "     1|12345678901\n" {
		t.Fatalf("a file at the cap must be read: %+v", r)
	}
	f.write(t, "over-cap.txt", "123456789012\n")
	if r := run(t, tl, `{"path": "over-cap.txt"}`); !r.IsError || !strings.Contains(r.Content, "13 bytes") {
		t.Fatalf("a file over the cap must be refused: %+v", r)
	}
}
