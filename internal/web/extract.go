package web

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	nurl "net/url"
	"strings"
	"unicode/utf8"

	"codeberg.org/readeck/go-readability/v2"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/ledongthuc/pdf"
)

// Document is the readable form of a page.
type Document struct {
	URL       string `json:"url"`
	Title     string `json:"title,omitempty"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Extract turns a fetched page into markdown (HTML through readability,
// then HTML-to-markdown), text (PDF, plain text), capped at maxChars.
func Extract(p Page, maxChars int) (Document, error) {
	if p.Status >= 400 {
		msg := strings.TrimSpace(string(p.Body))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return Document{}, fmt.Errorf("HTTP %d from %s: %s", p.Status, p.URL, msg)
	}
	ct, _, _ := mime.ParseMediaType(p.ContentType)
	if ct == "" || ct == "application/octet-stream" {
		ct, _, _ = mime.ParseMediaType(http.DetectContentType(p.Body))
	}
	d := Document{URL: p.URL}
	var err error
	switch {
	case ct == "application/pdf" || bytes.HasPrefix(p.Body, []byte("%PDF-")):
		d.Content, err = pdfText(p.Body, maxChars)
	case ct == "text/html" || ct == "application/xhtml+xml":
		d.Title, d.Content, err = htmlMarkdown(p)
	case strings.HasPrefix(ct, "text/") || ct == "application/json" || ct == "application/xml":
		if !utf8.Valid(p.Body) {
			return Document{}, fmt.Errorf("%s is not UTF-8 text", p.URL)
		}
		d.Content = string(p.Body)
	default:
		return Document{}, fmt.Errorf("%s is %s, which web_extract cannot read (HTML, PDF and text only)", p.URL, ct)
	}
	if err != nil {
		return Document{}, err
	}
	d.Content, d.Truncated = capChars(strings.TrimSpace(d.Content), maxChars)
	return d, nil
}

func htmlMarkdown(p Page) (string, string, error) {
	u, _ := nurl.Parse(p.URL)
	art, err := readability.FromReader(bytes.NewReader(p.Body), u)
	if err != nil || art.Node == nil {
		// Not an article: convert the whole page.
		md, cerr := htmltomarkdown.ConvertString(string(p.Body))
		return "", md, cerr
	}
	var buf bytes.Buffer
	if err := art.RenderHTML(&buf); err != nil {
		return "", "", err
	}
	md, err := htmltomarkdown.ConvertString(buf.String())
	return art.Title(), md, err
}

// Bounds of reading a PDF: a small file can hold content streams that
// inflate to gigabytes (a PDF bomb), so extraction stops after
// pdfMaxOps content operators or pdfMaxPages pages, and once it has
// twice the characters the caller keeps.
const (
	pdfMaxOps   = 2_000_000
	pdfMaxPages = 2000
)

// errPDFLimit stops the content interpreter once a bound is reached.
var errPDFLimit = errors.New("pdf limit")

// pdfText extracts the text of a PDF, page by page, as the library's
// GetPlainText does (a newline per text object and T*), but bounded:
// up to about 2*maxChars characters (maxChars <= 0: 4*MaxBodyBytes).
func pdfText(b []byte, maxChars int) (s string, err error) {
	defer func() { // the parser panics on some malformed files
		if r := recover(); r != nil {
			err = fmt.Errorf("the PDF could not be read: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", fmt.Errorf("the PDF could not be read: %w", err)
	}
	limit := 4 * MaxBodyBytes
	if maxChars > 0 {
		limit = 2*maxChars + 1000
	}
	var out strings.Builder
	ops := 0
	for i := 1; i <= min(r.NumPage(), pdfMaxPages) && out.Len() < limit && ops < pdfMaxOps; i++ {
		if err := pdfPageText(r.Page(i), &out, &ops, limit); err != nil {
			return "", fmt.Errorf("the PDF text could not be extracted: %w", err)
		}
	}
	if len(strings.TrimSpace(out.String())) == 0 {
		return "", errors.New("the PDF has no extractable text (scanned images?)")
	}
	return out.String(), nil
}

// pdfPageText appends the text of page p to out, counting operators in
// ops, until out holds limit bytes or ops reaches pdfMaxOps.
func pdfPageText(p pdf.Page, out *strings.Builder, ops *int, limit int) (err error) {
	if p.V.IsNull() || p.V.Key("Contents").Kind() == pdf.Null {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && errors.Is(e, errPDFLimit) {
				return
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	fonts := map[string]*pdf.Font{}
	var enc pdf.TextEncoding
	show := func(raw string) {
		if enc == nil {
			out.WriteString(raw)
			return
		}
		out.WriteString(enc.Decode(raw))
	}
	pdf.Interpret(p.V.Key("Contents"), func(stk *pdf.Stack, op string) {
		if *ops++; *ops > pdfMaxOps || out.Len() >= limit {
			panic(errPDFLimit)
		}
		args := make([]pdf.Value, stk.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "BT", "T*":
			out.WriteString("\n")
		case "Tf":
			if len(args) != 2 {
				return
			}
			name := args[0].Name()
			f, ok := fonts[name]
			if !ok {
				ft := p.Font(name)
				f = &ft
				fonts[name] = f
			}
			enc = f.Encoder()
		case "Tj", "'", "\"":
			if len(args) > 0 {
				show(args[len(args)-1].RawString())
			}
		case "TJ":
			if len(args) == 1 {
				for j := 0; j < args[0].Len(); j++ {
					if x := args[0].Index(j); x.Kind() == pdf.String {
						show(x.RawString())
					}
				}
			}
		}
	})
	return nil
}

// capChars keeps the first max characters of s, with a marker.
func capChars(s string, max int) (string, bool) {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s, false
	}
	r := []rune(s)
	return string(r[:max]) + fmt.Sprintf("\n\n[... truncated: %d of %d characters shown ...]", max, len(r)), true
}
