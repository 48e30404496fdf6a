package tool

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// FuzzScriptOutput feeds the runner's output in arbitrary pieces: the
// marker is reported at most once, the kept text stays bounded, and
// nothing panics.
func FuzzScriptOutput(f *testing.F) {
	f.Add([]byte(rpcMarker+"/tmp/hermes-rpc-x/s\nhello\n"), uint8(3))
	f.Add([]byte("warning\n"+rpcMarker+"/tmp/d/s\n"+rpcMarker+"/tmp/e/s\n"), uint8(1))
	f.Add(bytes.Repeat([]byte("x"), 20000), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		o := newScriptOutput(1000)
		n := int(step%64) + 1
		for i := 0; i < len(data); i += n {
			o.Write(data[i:min(i+n, len(data))])
		}
		if len(o.marker) > 1 {
			t.Fatal("marker reported twice")
		}
		text, _ := o.text()
		if len(o.head)+len(o.tail) > 1000 || len(text) > 1000+maxBeforeMarker+100 {
			t.Fatalf("kept %d+%d bytes, text %d", len(o.head), len(o.tail), len(text))
		}
	})
}

// FuzzReadLine: readLine never returns more than its bound.
func FuzzReadLine(f *testing.F) {
	f.Add("{\"id\":1}\n{\"id\":2}\n", 8)
	f.Add(strings.Repeat("a", 100)+"\n", 50)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		r := bufio.NewReaderSize(strings.NewReader(s), 16)
		for {
			line, err := readLine(r, max)
			if err != nil {
				return
			}
			if len(line) > max {
				t.Fatalf("line of %d bytes over %d", len(line), max)
			}
		}
	})
}
