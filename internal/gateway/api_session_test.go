package gateway

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// X-Hermes-Session-Id carries the stored session id back, which the CLI's
// session commands resolve (`hermes sessions show ID` uses store.Resolve),
// and a request sending it continues that session; a client's own name
// for a conversation is still accepted (issue 24: api_… keys no command took).
func TestAPIServerSessionHeaderIsTheStoredSessionID(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	api := startAPIServer(t, srv)
	c := client(api)
	ctx := context.Background()
	ask := func(text, sid string) (string, string) {
		t.Helper()
		var hdr *http.Response
		opts := []option.RequestOption{option.WithResponseInto(&hdr)}
		if sid != "" {
			opts = append(opts, option.WithHeader(SessionHeader, sid))
		}
		res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "hermes-agent",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return res.Choices[0].Message.Content, hdr.Header.Get(SessionHeader)
	}
	_, sid := ask("hello", "")
	st, err := api.rt.Store().Resolve(ctx, sid)
	if err != nil || st.ID != sid {
		t.Fatalf("the session header %q is not a stored session id (%v)", sid, err)
	}
	msgs, err := api.rt.Store().StoredMessages(ctx, sid, false)
	if err != nil || len(msgs) != 2 || msgs[0].Content != "hello" {
		t.Fatalf("stored messages of %s: %+v %v", sid, msgs, err)
	}
	if got, again := ask("again", sid); got != "echo: again #2" || again != sid {
		t.Fatalf("continuing %s: %q under %q", sid, got, again)
	}
	// A client's own conversation name keeps working, and is answered
	// with the stored id, which continues the same session.
	_, own := ask("mine", "my-conversation")
	if _, err := api.rt.Store().Resolve(ctx, own); err != nil || own == "my-conversation" {
		t.Fatalf("own key answered with %q (%v)", own, err)
	}
	if got, _ := ask("mine again", "my-conversation"); got != "echo: mine again #2" {
		t.Fatalf("own key: %q", got)
	}
	if got, _ := ask("third", own); got != "echo: third #3" {
		t.Fatalf("stored id of an own key: %q", got)
	}
	// Responses carry the stored id too.
	var hdr *http.Response
	if _, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "hermes-agent",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("r")}}, option.WithResponseInto(&hdr)); err != nil {
		t.Fatal(err)
	}
	if rid := hdr.Header.Get(SessionHeader); !storedID(api, rid) {
		t.Fatalf("responses session header %q is not a stored session id", rid)
	}
}

func storedID(api *APIServer, id string) bool {
	st, err := api.rt.Store().Resolve(context.Background(), id)
	return err == nil && st.ID == id
}
