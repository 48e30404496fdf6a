package gateway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// openAIClientDir holds the openai npm client test (npm ci by .ci/run).
const openAIClientDir = "testdata/openaiclient"

// streamEventOrder is the event sequence OpenAI sends for a text answer
// (deltas collapsed to one).
var streamEventOrder = []string{"response.created", "response.in_progress", "response.output_item.added",
	"response.content_part.added", "response.output_text.delta", "response.output_text.done",
	"response.content_part.done", "response.output_item.done", "response.completed"}

// collapseDeltas drops repeated response.output_text.delta entries.
func collapseDeltas(types []string) []string {
	return slices.CompactFunc(slices.Clone(types), func(a, b string) bool {
		return a == b && a == "response.output_text.delta"
	})
}

// piecesModel answers in pieces: "answer one" then "answer two".
func piecesModel(r llmtest.Request) llmtest.Turn {
	n := 0
	for _, m := range chatBody(r) {
		if m.Role == "user" {
			n++
		}
	}
	return llmtest.Turn{Text: []string{"", "answer one, in pieces", "answer two, in pieces"}[min(n, 2)], ChunkSize: 5}
}

// POST /v1/responses with "stream": true answers with the Responses
// events the OpenAI SDKs consume (it was refused: issue 24).
func TestAPIServerStreamsResponsesToTheGoSDK(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(piecesModel)
	api := startAPIServer(t, srv)
	c := client(api)
	stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "hermes-agent", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("count")}})
	var types, deltas []string
	var seqs []int64
	var done responses.Response
	for stream.Next() {
		ev := stream.Current()
		types, seqs = append(types, ev.Type), append(seqs, ev.SequenceNumber)
		if ev.Type == "response.output_text.delta" {
			deltas = append(deltas, ev.Delta)
		}
		if ev.Type == "response.completed" {
			done = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := collapseDeltas(types); !slices.Equal(got, streamEventOrder) {
		t.Fatalf("events %v, want %v", got, streamEventOrder)
	}
	for i, s := range seqs {
		if s != int64(i) {
			t.Fatalf("sequence numbers %v", seqs)
		}
	}
	if strings.Join(deltas, "") != "answer one, in pieces" || len(deltas) < 4 {
		t.Fatalf("deltas %q", deltas)
	}
	if done.OutputText() != "answer one, in pieces" || done.Status != "completed" {
		t.Fatalf("completed response %+v", done)
	}
	got, err := c.Responses.Get(context.Background(), done.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != "answer one, in pieces" {
		t.Fatalf("the streamed response is not stored: %v %v", got, err)
	}
}

// The official openai npm client's responses.create({stream: true}) and
// responses.stream() work end to end, chained by previous_response_id.
func TestAPIServerStreamsResponsesToTheOpenAINpmClient(t *testing.T) {
	if _, err := os.Stat(filepath.Join(openAIClientDir, "node_modules", "openai")); err != nil {
		t.Skip("the openai npm client is not installed: run `npm ci` in internal/gateway/testdata/openaiclient (.ci/run does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	srv := llmtest.NewServer(t)
	srv.SetResponder(piecesModel)
	api := startAPIServer(t, srv)
	cmd := exec.Command(node, "responses_stream.mjs")
	cmd.Dir = openAIClientDir
	cmd.Env = append(os.Environ(), "HERMES_API_BASE=http://"+api.Addr()+"/v1", "HERMES_API_KEY="+testKey)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Types, Deltas, HelperDeltas                 []string
		Sequence                                    []int
		CompletedID, CompletedStatus, CompletedText string
		FinalText, FinalStatus                      string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if c := collapseDeltas(got.Types); !slices.Equal(c, streamEventOrder) {
		t.Fatalf("events %v, want %v", c, streamEventOrder)
	}
	for i, s := range got.Sequence {
		if s != i {
			t.Fatalf("sequence numbers %v", got.Sequence)
		}
	}
	if strings.Join(got.Deltas, "") != "answer one, in pieces" || len(got.Deltas) < 4 ||
		got.CompletedText != "answer one, in pieces" || got.CompletedStatus != "completed" {
		t.Fatalf("create({stream: true}): %+v", got)
	}
	if got.FinalText != "answer two, in pieces" || got.FinalStatus != "completed" || strings.Join(got.HelperDeltas, "") != got.FinalText {
		t.Fatalf("responses.stream() chained on %s: %+v", got.CompletedID, got)
	}
}
