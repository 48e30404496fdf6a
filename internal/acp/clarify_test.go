package acp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// UnstableCreateElicitation answers a form with c.elicit.
func (c *client) UnstableCreateElicitation(_ context.Context, p sdk.UnstableCreateElicitationRequest) (sdk.UnstableCreateElicitationResponse, error) {
	c.mu.Lock()
	elicit := c.elicit
	c.mu.Unlock()
	text := ""
	if elicit != nil {
		text = elicit(p)
	}
	if text == "" {
		return sdk.NewUnstableCreateElicitationResponseDecline(), nil
	}
	return sdk.UnstableCreateElicitationResponse{Accept: &sdk.UnstableCreateElicitationAccept{Action: "accept",
		Content: map[string]any{clarifyField: text}}}, nil
}

func clarifyTurn(args string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "c1", Name: "clarify", Args: args}}}
}

// TestClarifyChoicesAskedAsAPermissionRequest: an editor without forms
// gets the choices as the options of session/request_permission; the one
// picked is the model's answer. An open question it cannot show is
// declined at once ("no user to ask"), never left waiting.
func TestClarifyChoicesAskedAsAPermissionRequest(t *testing.T) {
	w := newWorld(t,
		clarifyTurn(`{"question":"Which branch?","choices":["main","dev"]}`),
		llmtest.Turn{Text: "on dev"},
		clarifyTurn(`{"question":"Anything else?"}`),
		llmtest.Turn{Text: "fine"},
	)
	c := w.connect(sdk.ClientCapabilities{})
	var asked []sdk.RequestPermissionRequest
	c.answer = func(p sdk.RequestPermissionRequest) string { asked = append(asked, p); return "choice_2" }
	id := c.newSession(t, w.work)
	c.prompt(t, id, "push it")
	if len(asked) != 1 || len(asked[0].Options) != 2 || asked[0].Options[1].Name != "dev" {
		t.Fatalf("permission requests: %+v", asked)
	}
	if body := string(w.srv.Requests()[1].Body); !strings.Contains(body, `\"user_response\": \"dev\"`) {
		t.Fatalf("the model read: %s", body)
	}
	c.prompt(t, id, "more")
	if len(asked) != 1 {
		t.Fatalf("an open question went to request_permission: %+v", asked[1:])
	}
	if body := string(w.srv.Requests()[3].Body); !strings.Contains(body, "no user to ask") {
		t.Fatalf("the model read: %s", body)
	}
}

// TestClarifyAskedAsAFormWhenTheEditorOffersElicitation: with
// elicitation.form the question is a form with one text field whose
// description lists the choices; the typed answer reaches the model.
func TestClarifyAskedAsAFormWhenTheEditorOffersElicitation(t *testing.T) {
	w := newWorld(t, clarifyTurn(`{"question":"Name the release?","choices":["v1.0"]}`), llmtest.Turn{Text: "ok"})
	c := w.connect(sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.ElicitationFormCapabilities{}}})
	var forms []sdk.UnstableCreateElicitationRequest
	c.elicit = func(p sdk.UnstableCreateElicitationRequest) string { forms = append(forms, p); return "v2.0-rc1" }
	id := c.newSession(t, w.work)
	c.prompt(t, id, "release")
	if len(forms) != 1 || forms[0].Form == nil || forms[0].Form.Message != "Name the release?" {
		t.Fatalf("forms: %+v", forms)
	}
	field, _ := forms[0].Form.RequestedSchema.Properties[clarifyField].(map[string]any)
	if desc, _ := field["description"].(string); !strings.Contains(desc, "1. v1.0") {
		t.Fatalf("field: %+v", field)
	}
	if body := string(w.srv.Requests()[1].Body); !strings.Contains(body, `\"user_response\": \"v2.0-rc1\"`) {
		t.Fatalf("the model read: %s", body)
	}
}
