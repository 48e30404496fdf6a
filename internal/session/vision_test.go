package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// pngImage is a 1×1 PNG.
var pngImage, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// newVisionRuntime is newTestRuntime with the model section (and more
// config) given as YAML.
func newVisionRuntime(t *testing.T, modelYAML string) *Runtime {
	t.Helper()
	home, work := t.TempDir(), t.TempDir()
	cfg := modelYAML + "terminal:\n  cwd: " + work + "\ncompression:\n  enabled: false\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(home, "skills"), 0o755)
	os.WriteFile(filepath.Join(home, "skills", ".no-bundled-skills"), nil, 0o644)
	loaded, err := config.Load(home, config.LoadOptions{Getenv: func(k string) string {
		if k == "HERMES_HOME" {
			return home
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(context.Background(), Options{Config: loaded, Home: home, UserHome: t.TempDir(),
		Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} }, Warn: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := os.WriteFile(filepath.Join(rt.Cwd(), "shot.png"), pngImage, 0o644); err != nil {
		t.Fatal(err)
	}
	return rt
}

// visionResponder answers a request carrying an image with answer, the
// agent's first request with a vision_analyze call and the next with the
// tool result it read.
func visionResponder(answer string) func(llmtest.Request) llmtest.Turn {
	return visionResponderFor("shot.png", answer)
}

// visionResponderFor is visionResponder asking about the image at src.
func visionResponderFor(src, answer string) func(llmtest.Request) llmtest.Turn {
	return func(r llmtest.Request) llmtest.Turn {
		body := string(r.Body)
		switch {
		case strings.Contains(body, "data:image/png;base64,") || strings.Contains(body, `"type":"image"`):
			return llmtest.Turn{Text: answer}
		case readConvo(r).results == 0 && !strings.Contains(body, "tool_result"):
			return call("vision_analyze", `{"image_url":"`+src+`","question":"What colour is the pixel?"}`)
		case strings.Contains(body, "tool_result"): // Anthropic's shape of tool results
			return llmtest.Turn{Text: "tool said: " + body}
		}
		return llmtest.Turn{Text: "tool said: " + readConvo(r).result}
	}
}

// runVision runs one turn and returns its final text.
func runVision(t *testing.T, rt *Runtime) string {
	t.Helper()
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, _ := s.Send(context.Background(), "look at shot.png", SendOptions{})
	res, err := turn.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res.Text
}

// imageRequest returns the one request that carried the image.
func imageRequest(t *testing.T, srv *llmtest.Server) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), base64.StdEncoding.EncodeToString(pngImage)) {
			found = append(found, r.JSON())
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d requests carried the image, want 1", len(found))
	}
	return found[0]
}

// TestVisionAnalyzeOpenAIImageURL: a session model that takes images
// (gpt-4o) gets the question and the image as an OpenAI image_url data URL.
func TestVisionAnalyzeOpenAIImageURL(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(visionResponder("The pixel is red."))
	rt := newVisionRuntime(t, "model:\n  provider: custom\n  default: gpt-4o\n  base_url: "+srv.URL+"\n")
	if got := runVision(t, rt); !strings.Contains(got, "The pixel is red.") {
		t.Fatalf("final %q", got)
	}
	req := imageRequest(t, srv)
	b, _ := json.Marshal(req["messages"])
	want := `{"image_url":{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(pngImage) + `"},"type":"image_url"}`
	if req["model"] != "gpt-4o" || !strings.Contains(string(b), want) || !strings.Contains(string(b), "What colour is the pixel?") {
		t.Fatalf("vision request: model %v, messages %s", req["model"], b)
	}
}

// TestVisionAnalyzeAnthropicImageBlock: with an Anthropic model the image
// goes as a base64 image block.
func TestVisionAnalyzeAnthropicImageBlock(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(visionResponder("A red pixel."))
	rt := newVisionRuntime(t, "model:\n  provider: anthropic\n  default: claude-sonnet-4-5\n  base_url: "+srv.AnthropicURL+"\n  api_key: sk-ant-test\n")
	if got := runVision(t, rt); !strings.Contains(got, "A red pixel.") {
		t.Fatalf("final %q", got)
	}
	b, _ := json.Marshal(imageRequest(t, srv)["messages"])
	want := `{"source":{"data":"` + base64.StdEncoding.EncodeToString(pngImage) + `","media_type":"image/png","type":"base64"},"type":"image"}`
	if !strings.Contains(string(b), want) {
		t.Fatalf("vision request messages %s", b)
	}
}

// TestVisionAnalyzeUsesAuxiliaryVision: a session model that does not take
// images leaves the image to auxiliary.vision's model (its own server);
// without one the model is told what to set.
func TestVisionAnalyzeUsesAuxiliaryVision(t *testing.T) {
	mainSrv, auxSrv := llmtest.NewServer(t), llmtest.NewServer(t)
	mainSrv.SetResponder(visionResponder("main must not see the image"))
	auxSrv.SetResponder(visionResponder("aux: red"))
	rt := newVisionRuntime(t, "model:\n  provider: custom\n  default: fake-text-model\n  base_url: "+mainSrv.URL+"\n"+
		"auxiliary:\n  vision:\n    provider: custom\n    model: fake-vision-model\n    base_url: "+auxSrv.URL+"\n")
	if got := runVision(t, rt); !strings.Contains(got, "aux: red") {
		t.Fatalf("final %q", got)
	}
	if req := imageRequest(t, auxSrv); req["model"] != "fake-vision-model" {
		t.Fatalf("aux request model %v", req["model"])
	}
	for _, r := range mainSrv.Requests() {
		if strings.Contains(string(r.Body), "data:image") {
			t.Fatal("the main model got the image")
		}
	}

	srv := llmtest.NewServer(t)
	srv.SetResponder(visionResponder("unused"))
	rt = newVisionRuntime(t, "model:\n  provider: custom\n  default: fake-text-model\n  base_url: "+srv.URL+"\n")
	if got := runVision(t, rt); !strings.Contains(got, "does not take images") || !strings.Contains(got, "auxiliary.vision") {
		t.Fatalf("final %q", got)
	}
}

// TestVisionAnalyzeFetchesAURL: an image URL is fetched as web_extract
// fetches (here a loopback server, allowed by
// security.allow_private_urls) and sent as the image.
func TestVisionAnalyzeFetchesAURL(t *testing.T) {
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream") // the bytes decide, not the header
		w.Write(pngImage)
	}))
	defer img.Close()
	srv := llmtest.NewServer(t)
	srv.SetResponder(visionResponderFor(img.URL+"/pixel", "fetched: red"))
	rt := newVisionRuntime(t, "model:\n  provider: custom\n  default: gpt-4o\n  base_url: "+srv.URL+"\nsecurity:\n  allow_private_urls: true\n")
	if got := runVision(t, rt); !strings.Contains(got, "fetched: red") {
		t.Fatalf("final %q", got)
	}
	imageRequest(t, srv)
}
