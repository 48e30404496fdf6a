package web

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func bombPDF(n int, line []byte) []byte {
	var raw bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&raw, zlib.BestCompression)
	zw.Write([]byte("BT /F1 14 Tf 72 720 Td 18 TL\n"))
	for i := 0; i < n; i++ {
		zw.Write(line)
	}
	zw.Write([]byte("ET"))
	zw.Close()
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", raw.Len(), raw.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// A PDF bomb (a 300 KB file whose content stream inflates to 100 MB of
// text operators) is read only as far as the text web_extract keeps: it
// used to take 1.6 GB of allocations (and 20 s of CPU); a 10 MiB one
// would exhaust the host's memory.
func TestExtractPDFBombIsBounded(t *testing.T) {
	p := bombPDF(2_000_000, []byte("(aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa) Tj T*\n"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := Extract(Page{URL: "https://example.com/bomb.pdf", Status: 200, ContentType: "application/pdf", Body: p}, 20000)
	runtime.ReadMemStats(&after)
	if err != nil || !d.Truncated || !strings.HasPrefix(d.Content, "aaaa") {
		t.Fatalf("Extract = %.100q truncated=%v, %v", d.Content, d.Truncated, err)
	}
	if n := (after.TotalAlloc - before.TotalAlloc) >> 20; n > 256 {
		t.Errorf("reading the PDF bomb allocated %d MiB", n)
	}
}
