package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/web"
	"github.com/hermes-go/hermes/internal/workspacefile"
)

// vision_analyze limits.
const (
	MaxVisionImageBytes = 20 << 20 // a workspace image (a URL is bounded by web.MaxBodyBytes)
	maxVisionQuestion   = 4000     // bytes
	maxVisionAnswer     = 20000    // bytes of the model's answer kept
	defaultVisionAsk    = "Describe this image in detail: what it shows, any text in it, and anything notable."
)

// visionTypes are the image types the providers take (their magic bytes
// decide, never the name or a server's Content-Type).
var visionTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// VisionModel is the model that looks at an image for a session.
type VisionModel struct {
	Provider llm.Provider
	Model    string
	Timeout  time.Duration // bound of the call (0 = none beyond the turn's)
}

// VisionOptions are the dependencies of vision_analyze.
type VisionOptions struct {
	// Workspace is the host directory image paths are read beneath
	// (workspacefile: links out of it, FIFOs, devices and HERMES_HOME's
	// protected files are refused); HermesHome names those files.
	Workspace, HermesHome string
	// Fetch gets image URLs, the way web_extract fetches (the same SSRF
	// guard on the host, the egress gate from the box).
	Fetch web.Fetcher
	// Model picks the model for the session: its own when it takes
	// images, else auxiliary.vision; the error is for the model.
	Model func(ctx context.Context, sessionID string) (VisionModel, error)
}

// VisionAnalyze is Hermes's vision_analyze (toolset vision): it sends one
// image (a workspace path or an http(s) URL) with a question to a model
// that takes images and returns its answer.
type VisionAnalyze struct{ opts VisionOptions }

// NewVisionAnalyze returns the tool.
func NewVisionAnalyze(opts VisionOptions) *VisionAnalyze { return &VisionAnalyze{opts: opts} }

// Toolset implements Tool.
func (t *VisionAnalyze) Toolset() string { return "vision" }

// Parallel implements Tool.
func (t *VisionAnalyze) Parallel() bool { return true }

// Spec implements Tool.
func (t *VisionAnalyze) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "vision_analyze",
		Description: "Analyze an image with a vision model: describe it or answer a question about it. " +
			"image_url is an http(s) URL or a path in the workspace (PNG, JPEG, GIF or WebP, at most 20 MB).",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"image_url":{"type":"string","description":"Image URL (http/https) or workspace file path"},` +
			`"question":{"type":"string","description":"What to find out about the image (default: a detailed description)"}},` +
			`"required":["image_url"]}`),
	}
}

// Run implements Tool.
func (t *VisionAnalyze) Run(ctx context.Context, call Call) Result {
	var args struct {
		ImageURL string `json:"image_url"`
		Question string `json:"question"`
	}
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("vision_analyze: %v", err)
	}
	src := strings.TrimSpace(args.ImageURL)
	question := strings.TrimSpace(args.Question)
	switch {
	case src == "":
		return Errorf("vision_analyze: image_url is required: an http(s) URL or a workspace path")
	case len(question) > maxVisionQuestion:
		return Errorf("vision_analyze: the question is %d bytes; keep it under %d", len(question), maxVisionQuestion)
	case question == "":
		question = defaultVisionAsk
	}
	data, err := t.load(ctx, call.SessionID, src)
	if err != nil {
		return Errorf("vision_analyze: %s", oneLine(err.Error()))
	}
	mediaType := http.DetectContentType(data)
	if !visionTypes[mediaType] {
		return Errorf("vision_analyze: %s is not a PNG, JPEG, GIF or WebP image (its content looks like %s)", displaySource(src), mediaType)
	}
	if t.opts.Model == nil {
		return Errorf("vision_analyze: no model is set up to look at images")
	}
	m, err := t.opts.Model(ctx, call.SessionID)
	if err != nil {
		return Errorf("vision_analyze: %s", oneLine(err.Error()))
	}
	answer, err := askVision(ctx, m, question, mediaType, data)
	if err != nil {
		return Errorf("vision_analyze: the vision model %s failed: %s", m.Model, oneLine(err.Error()))
	}
	return JSON(map[string]any{"success": true, "analysis": truncateUTF8(answer, maxVisionAnswer), "model": m.Model})
}

// load reads the image: a URL through Fetch, else a workspace file.
func (t *VisionAnalyze) load(ctx context.Context, sessionID, src string) ([]byte, error) {
	lower := strings.ToLower(src)
	switch {
	case strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://"):
		if t.opts.Fetch == nil {
			return nil, errors.New("fetching URLs is not available here")
		}
		p, err := t.opts.Fetch.Fetch(ctx, sessionID, src)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", displaySource(src), err)
		}
		if p.Status < 200 || p.Status > 299 {
			return nil, fmt.Errorf("%s answered HTTP %d", displaySource(src), p.Status)
		}
		return p.Body, nil
	case strings.HasPrefix(lower, "file://"):
		src = src[len("file://"):]
	case strings.Contains(src, "://") || strings.HasPrefix(lower, "data:"):
		return nil, fmt.Errorf("%s: give an http(s) URL or a workspace path", displaySource(src))
	}
	if t.opts.Workspace == "" {
		return nil, errors.New("no workspace to read images from")
	}
	r, err := workspacefile.Open(t.opts.Workspace, t.opts.HermesHome)
	if err != nil {
		return nil, fmt.Errorf("the workspace %s cannot be read: %v", t.opts.Workspace, err)
	}
	defer r.Close()
	data, err := r.ReadFile(src, MaxVisionImageBytes)
	var refused *workspacefile.RefusedError
	switch {
	case errors.As(err, &refused):
		return nil, refused
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s does not exist in the workspace %s", workspacefile.DisplayName(src), t.opts.Workspace)
	case err != nil:
		return nil, fmt.Errorf("%s: %v", workspacefile.DisplayName(src), err)
	}
	return data, nil
}

// askVision sends the question and the image to m and returns its text.
func askVision(ctx context.Context, m VisionModel, question, mediaType string, data []byte) (string, error) {
	if m.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Timeout)
		defer cancel()
	}
	st, err := m.Provider.Stream(ctx, llm.Request{
		Model:    m.Model,
		System:   "You analyze images for another AI agent. Answer its question about the image precisely and completely; transcribe text you see.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: question, Parts: []llm.Part{llm.ImagePart(mediaType, data)}}},
	})
	if err != nil {
		return "", err
	}
	resp, err := llm.Accumulate(st, nil)
	if err != nil {
		return "", err
	}
	text := strings.TrimSpace(resp.Message.Content)
	if text == "" {
		return "", errors.New("it answered nothing")
	}
	return text, nil
}

// displaySource shortens an image source for an error line: at most 200
// bytes, control characters escaped.
func displaySource(s string) string {
	return workspacefile.DisplayName(truncateUTF8(s, 200))
}

// oneLine joins the lines of s.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
