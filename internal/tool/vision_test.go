package tool

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-go/hermes/internal/web"
)

var onePixelPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// visionNoModel is vision_analyze on workspace ws whose model must never
// be asked (the input is refused first).
func visionNoModel(t *testing.T, ws string, fetch web.Fetcher) *VisionAnalyze {
	return NewVisionAnalyze(VisionOptions{Workspace: ws, Fetch: fetch, Model: func(context.Context, string) (VisionModel, error) {
		t.Error("the model was asked about refused input")
		return VisionModel{}, context.Canceled
	}})
}

// TestVisionAnalyzeRefusesBadInput: a 50 MB file, a file that is not an
// image, a link out of the workspace, a FIFO, a missing file, a file://
// path outside and a loopback URL each get a one-line tool error, without
// reading the file whole or hanging.
func TestVisionAnalyzeRefusesBadInput(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	big, err := os.Create(filepath.Join(ws, "huge.png"))
	if err != nil {
		t.Fatal(err)
	}
	big.Write(onePixelPNG)
	big.Truncate(50 << 20) // sparse
	big.Close()
	os.WriteFile(filepath.Join(ws, "notes.png"), []byte("just text, named like an image\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.png"), onePixelPNG, 0o644)
	os.Symlink(filepath.Join(outside, "secret.png"), filepath.Join(ws, "link.png"))
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe.png"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(onePixelPNG) }))
	defer srv.Close()
	tl := visionNoModel(t, ws, web.NewHTTPFetcher(false))
	for _, c := range []struct{ src, want string }{
		{"huge.png", "over the 20971520-byte limit"},
		{"notes.png", "is not a PNG, JPEG, GIF or WebP image"},
		{"link.png", "outside the workspace"},
		{"pipe.png", "named pipe"},
		{"missing.png", "does not exist"},
		{"file://" + filepath.Join(outside, "secret.png"), "not inside the workspace"},
		{"../" + filepath.Base(outside) + "/secret.png", "not inside the workspace"},
		{srv.URL + "/pixel.png", "127.0.0.1"},
		{"ftp://example.com/a.png", "http(s) URL or a workspace path"},
	} {
		r := run(t, tl, `{"image_url":"`+c.src+`"}`)
		if !r.IsError || !strings.Contains(r.Content, c.want) || strings.Contains(r.Content, "\n") {
			t.Errorf("%s: got %q, want one line with %q", c.src, r.Content, c.want)
		}
	}
}
