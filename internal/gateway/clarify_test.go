package gateway

import (
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// clarifyModel asks one clarify question, then answers with what the
// tool returned.
func clarifyModel(r llmtest.Request) llmtest.Turn {
	msgs := chatBody(r)
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		return llmtest.Turn{Text: "you said: " + last.Text()}
	}
	return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "clarify", Args: `{"question":"Deploy to which region?","choices":["eu-west","us-east"]}`}}}
}

// TestTelegramClarifyAsksInTheChatAndTakesTheNextMessage: the question
// arrives as a chat message with numbered choices; the person's next
// message answers it (it starts no turn of its own).
func TestTelegramClarifyAsksInTheChatAndTakesTheNextMessage(t *testing.T) {
	w := startTelegramWith(t, "", map[int64]bool{5: true}, clarifyModel)
	defer w.stop()
	w.fake.SendText(5, 5, "private", "deploy it")
	asked := w.fake.WaitSent(t, 5, 1)
	if len(asked) != 1 || !strings.Contains(asked[0].Text, "Deploy to which region?") || !strings.Contains(asked[0].Text, "2. us-east") {
		t.Fatalf("question: %+v", asked)
	}
	w.fake.SendText(5, 5, "private", "2")
	got := w.fake.WaitSent(t, 5, 2)
	if len(got) != 2 || !strings.Contains(got[1].Text, "you said:") || !strings.Contains(got[1].Text, "us-east") {
		t.Fatalf("answer: %+v", got)
	}
}
