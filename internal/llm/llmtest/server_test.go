package llmtest

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestScriptOrderAndExhaustion(t *testing.T) {
	s := NewServer(t, Turn{Text: "one"}, Turn{Text: "two"})
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %q is not loopback", s.URL)
	}
	code, body := post(t, s.URL+"/chat/completions", `{"model":"m"}`)
	if code != 200 || !strings.Contains(body, `"content":"one"`) || !strings.Contains(body, "data: [DONE]") {
		t.Fatalf("%d %s", code, body)
	}
	code, body = post(t, s.AnthropicURL+"/v1/messages", `{"model":"m"}`)
	if code != 200 || !strings.Contains(body, `"text":"two"`) || !strings.Contains(body, "event: message_stop") {
		t.Fatalf("%d %s", code, body)
	}
	code, body = post(t, s.URL+"/chat/completions", `{}`)
	if code != 400 || !strings.Contains(body, "request 3 has no scripted turn (the script has 2 turns)") {
		t.Fatalf("%d %s", code, body)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || reqs[0].JSON()["model"] != "m" || reqs[1].Path != "/v1/messages" {
		t.Fatalf("requests = %+v", reqs)
	}
}

func TestLoadTurns(t *testing.T) {
	dir := t.TempDir()
	arr := filepath.Join(dir, "a.json")
	_ = os.WriteFile(arr, []byte(`[{"text":"a"},{"tool_calls":[{"name":"read_file","args":"{}"}]}]`), 0o644)
	turns, err := LoadTurns(arr)
	if err != nil || len(turns) != 2 || turns[1].ToolCalls[0].Name != "read_file" {
		t.Fatalf("%+v %v", turns, err)
	}
	lines := filepath.Join(dir, "b.jsonl")
	_ = os.WriteFile(lines, []byte("# comment\n{\"text\":\"a\"}\n{\"status\":\n"), 0o644)
	if _, err := LoadTurns(lines); err == nil || !strings.Contains(err.Error(), "b.jsonl:3") {
		t.Fatalf("err = %v", err)
	}
}

func TestSplitKeepsRunes(t *testing.T) {
	parts := split("aéb€", 1)
	if strings.Join(parts, "") != "aéb€" || len(parts) != 4 {
		t.Fatalf("parts = %q", parts)
	}
}
