package gateway

import (
	"strings"
	"testing"
)

func TestParseChatRequest(t *testing.T) {
	_, conv, err := parseChatRequest([]byte(`{"model":"hermes-agent","messages":[
		{"role":"system","content":"be brief"},
		{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},
		{"role":"user","content":[{"type":"text","text":"how "},{"type":"text","text":"are you"}]}]}`))
	if err != nil || conv.System != "be brief" || conv.Text != "how are you" || len(conv.History) != 2 {
		t.Fatalf("%+v %v", conv, err)
	}
	for body, want := range map[string]string{
		`{`:               "not a JSON",
		`{"messages":[]}`: "must not be empty",
		`{"messages":[{"role":"bot","content":"x"}]}`:                     "role",
		`{"messages":[{"role":"assistant","content":"x"}]}`:               "last message",
		`{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`: "not supported",
	} {
		if _, _, err := parseChatRequest([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

func FuzzParseChatRequest(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"stream":true}`))
	f.Add([]byte(`{"input":"hi","previous_response_id":"resp_1"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, conv, err := parseChatRequest(body); err == nil && strings.TrimSpace(conv.Text) == "" {
			t.Fatal("accepted a request without a user message")
		}
		if _, conv, err := parseResponsesRequest(body); err == nil && strings.TrimSpace(conv.Text) == "" {
			t.Fatal("accepted a responses request without input")
		}
	})
}
