package egress

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReplacingReaderAcrossReadBoundaries(t *testing.T) {
	reps := []replacement{{"SECRET-VALUE", "<p1>"}, {"OTHER", "<p2>"}}
	in := "a SECRET-VALUE b SECRET-VAL c OTHER SECRET-VALUESECRET-VALUE SECRET-VALU"
	want := "a <p1> b SECRET-VAL c <p2> <p1><p1> SECRET-VALU"
	for name, src := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"halves":   iotest.HalfReader(strings.NewReader(in)),
	} {
		rr := newReplacingReader(src, reps)
		got, err := io.ReadAll(iotest.OneByteReader(rr))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
		if !rr.replacedAny("OTHER") || !rr.replacedAny("SECRET-VALUE") {
			t.Errorf("%s: hits not recorded", name)
		}
	}
}

func TestReplacingReaderReleasesDataThatCannotBeASecret(t *testing.T) {
	// A streamed response must not be held back unless its tail could be
	// the start of a secret.
	pr, pw := io.Pipe()
	rr := newReplacingReader(pr, []replacement{{"SECRET", "x"}})
	go pw.Write([]byte("data: hello\n\n"))
	buf := make([]byte, 64)
	n, err := rr.Read(buf)
	if err != nil || string(buf[:n]) != "data: hello\n\n" {
		t.Fatalf("%q %v", buf[:n], err)
	}
	go pw.Write([]byte("tail SEC"))
	n, _ = rr.Read(buf)
	if string(buf[:n]) != "tail " {
		t.Fatalf("held back the wrong tail: %q", buf[:n])
	}
	go func() { pw.Write([]byte("RET!")); pw.Close() }()
	rest, _ := io.ReadAll(rr)
	if string(rest) != "x!" {
		t.Fatalf("%q", rest)
	}
}
