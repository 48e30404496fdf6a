package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// A streamed chat completion carries the answer in the pieces the model
// streamed, not in one delta at the end (issue 24).
func TestAPIServerStreamsTheModelsPieces(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(func(llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "one two three four five six", ChunkSize: 4}
	})
	api := startAPIServer(t, srv)
	c := client(api)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "hermes-agent", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count")},
	})
	var pieces []string
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			if ch.Delta.Content != "" {
				pieces = append(pieces, ch.Delta.Content)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pieces, ""); got != "one two three four five six" {
		t.Fatalf("streamed %q", got)
	}
	if len(pieces) != 7 {
		t.Fatalf("the answer came in %d deltas %q; the model streamed 7 pieces", len(pieces), pieces)
	}
}
