package egress

import (
	"bytes"
	"encoding/base64"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestFoldInPlaceLowersOnlyASCIILetters(t *testing.T) {
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	for off := range 8 { // every alignment of the 8-byte loop
		got := append([]byte(nil), all[off:]...)
		foldInPlace(got)
		if want := foldASCII(all[off:]); !bytes.Equal(got, want) {
			t.Fatalf("offset %d: %q, want %q", off, got, want)
		}
	}
}

func TestRedactingReaderAcrossReadBoundaries(t *testing.T) {
	const value = "sk/live+Q7mZ-s3cr3t-0123456789"
	r := newRedactor([]*boxSecret{{name: "K", value: value, placeholder: "<ph>"}})
	in := "a " + value + " b " + strings.ToUpper(value[:12]) + " c %2F%2f" + strings.ReplaceAll(value, "/", `\/`) +
		" d " + value[:7] + " e &#x73;k&#47;live&plus;Q7mZ-s3cr3t"
	want := "a <ph> b <ph> c %2F%2f<ph> d " + value[:7] + " e <ph>"
	for name, src := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"halves":   func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
	} {
		got, err := io.ReadAll(iotest.OneByteReader(newRedactingReader(src(), r)))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if got := r.String(in); got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
}

func TestRedactingReaderReleasesDataThatCannotBeASecret(t *testing.T) {
	r := newRedactor([]*boxSecret{{name: "K", value: "SECRET-VALUE-123", placeholder: "x"}})
	pr, pw := io.Pipe()
	rr := newRedactingReader(pr, r)
	go pw.Write([]byte("data: hello\n\n"))
	buf := make([]byte, 64)
	n, err := rr.Read(buf)
	if err != nil || string(buf[:n]) != "data: hello\n\n" {
		t.Fatalf("%q %v", buf[:n], err)
	}
	go pw.Write([]byte("tail SECRET-V"))
	n, _ = rr.Read(buf)
	if string(buf[:n]) != "tail " {
		t.Fatalf("held back the wrong tail: %q", buf[:n])
	}
	go func() { pw.Write([]byte("ALUE-123!")); pw.Close() }()
	rest, _ := io.ReadAll(rr)
	if string(rest) != "x!" {
		t.Fatalf("%q", rest)
	}
}

// A secret stored upstream and served back as wrapped base64 (GitHub's blob
// and contents APIs wrap at 60 columns, MIME at 76 with CRLF, JSON escapes
// the breaks as \n) must not come back decodable wherever the break falls.
func TestRedactorBase64WrappedAcrossLineBreaks(t *testing.T) {
	const value = "sk-attack-0123456789abcdef-TOKEN"
	r := newRedactor([]*boxSecret{{name: "K", value: value, placeholder: "hermes-secret-K-ffffffffffffffff"}})
	wrap := func(s string, n int, sep string) string {
		var b strings.Builder
		for i := 0; i < len(s); i += n {
			b.WriteString(s[i:min(i+n, len(s))] + sep)
		}
		return b.String()
	}
	unwrap := strings.NewReplacer("\r", "", "\n", "", `\n`, "", "%0A", "")
	for k := range 80 {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", k) + value + " tail"))
		for name, in := range map[string]string{
			"60 LF": wrap(enc, 60, "\n"), "76 CRLF": wrap(enc, 76, "\r\n"),
			"JSON": `{"content":"` + wrap(enc, 60, `\n`) + `"}`, "form": wrap(enc, 60, "%0A"),
		} {
			out := unwrap.Replace(r.String(in))
			out = strings.TrimSuffix(strings.TrimPrefix(out, `{"content":"`), `"}`)
			dec, _ := base64.StdEncoding.DecodeString(out)
			if strings.Contains(strings.ToLower(string(dec)), "attack-0123") {
				t.Fatalf("%s, %d bytes before the secret: decodes to %q", name, k, dec)
			}
		}
	}
}
