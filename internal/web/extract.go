package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
		d.Content, err = pdfText(p.Body)
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

// pdfText extracts the text of a PDF, page by page.
func pdfText(b []byte) (s string, err error) {
	defer func() { // the parser panics on some malformed files
		if r := recover(); r != nil {
			err = fmt.Errorf("the PDF could not be read: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", fmt.Errorf("the PDF could not be read: %w", err)
	}
	tr, err := r.GetPlainText()
	if err != nil {
		return "", fmt.Errorf("the PDF text could not be extracted: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(tr, 4*MaxBodyBytes))
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return "", errors.New("the PDF has no extractable text (scanned images?)")
	}
	return string(out), nil
}

// capChars keeps the first max characters of s, with a marker.
func capChars(s string, max int) (string, bool) {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s, false
	}
	r := []rune(s)
	return string(r[:max]) + fmt.Sprintf("\n\n[... truncated: %d of %d characters shown ...]", max, len(r)), true
}
