package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/llm"
)

// clarify limits. Hermes offers up to 4 choices plus "Other"
// (tools/clarify_tool.py); the texts are bounded so a question fits a
// chat message and a terminal screen.
const (
	MaxClarifyChoices     = 4
	maxClarifyQuestion    = 2000 // bytes
	maxClarifyChoice      = 200  // bytes per choice
	MaxClarifyAnswerBytes = 4000
)

// ErrNoUser is what an Asker returns when nobody can answer: a headless
// run (-z, chat -q, the API server, cron), or a front end without a way
// to ask.
var ErrNoUser = errors.New("no user to ask")

// Question is what clarify asks a person: the question and up to
// MaxClarifyChoices choices (none: an open question). The person may
// answer with a choice or with text of their own.
type Question struct {
	SessionID string
	Question  string
	Choices   []string
}

// Asker puts a question to the person of a session and waits for the
// answer, or returns ErrNoUser at once when nobody can answer, or
// ctx.Err() when the turn ends first.
type Asker interface {
	Ask(ctx context.Context, q Question) (string, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(ctx context.Context, q Question) (string, error)

// Ask implements Asker.
func (f AskerFunc) Ask(ctx context.Context, q Question) (string, error) { return f(ctx, q) }

// Clarify is the `clarify` tool (Hermes "clarify": question and optional
// choices): it asks the person and returns their answer. Calls run one at
// a time (a person answers one question after another).
type Clarify struct{ asker Asker }

// NewClarify returns the clarify tool asking through a (nil: nobody).
func NewClarify(a Asker) *Clarify { return &Clarify{asker: a} }

// Spec implements Tool.
func (c *Clarify) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "clarify",
		Description: "Ask the user a question when you need clarification, feedback, or a decision before proceeding. " +
			"Provide up to 4 choices; the user picks one or types their own answer. List the choice you recommend FIRST. " +
			"Omit choices for an open-ended question. In runs without a user (scripts, API, cron) it answers at once " +
			"that there is nobody to ask: then decide yourself and say what you assumed.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"question":{"type":"string","description":"The question itself, and ONLY the question. Do NOT embed the answer options here."},` +
			`"choices":{"type":"array","items":{"type":"string"},"maxItems":4,"description":"Up to 4 selectable choices. Omit for open-ended."}},` +
			`"required":["question"]}`),
	}
}

// Toolset implements Tool.
func (c *Clarify) Toolset() string { return "clarify" }

// Parallel implements Tool: questions are asked one at a time.
func (c *Clarify) Parallel() bool { return false }

// Run implements Tool.
func (c *Clarify) Run(ctx context.Context, call Call) Result {
	var args struct {
		Question string   `json:"question"`
		Choices  []string `json:"choices"`
	}
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("clarify: %v", err)
	}
	q, err := checkQuestion(call.SessionID, args.Question, args.Choices)
	if err != nil {
		return Errorf("clarify: %v", err)
	}
	if c.asker == nil {
		return noUser(q)
	}
	answer, err := c.asker.Ask(ctx, q)
	switch {
	case errors.Is(err, ErrNoUser):
		return noUser(q)
	case err != nil && ctx.Err() != nil:
		return Errorf("clarify: the turn ended before the user answered")
	case err != nil:
		return Errorf("clarify: the question could not be asked: %v", err)
	}
	answer = truncateUTF8(strings.TrimSpace(answer), MaxClarifyAnswerBytes)
	return JSON(map[string]any{"question": q.Question, "choices_offered": nilIfNone(q.Choices), "user_response": answer})
}

// checkQuestion validates clarify's arguments (errors are for the model).
func checkQuestion(sessionID, question string, choices []string) (Question, error) {
	question = strings.TrimSpace(question)
	switch {
	case question == "":
		return Question{}, errors.New("question is empty: ask one question")
	case len(question) > maxClarifyQuestion:
		return Question{}, fmt.Errorf("the question is %d bytes; ask a shorter one (at most %d)", len(question), maxClarifyQuestion)
	case len(choices) > MaxClarifyChoices:
		return Question{}, fmt.Errorf("%d choices given; offer at most %d (the user can always type another answer)", len(choices), MaxClarifyChoices)
	}
	var kept []string
	for i, ch := range choices {
		ch = strings.Join(strings.Fields(ch), " ")
		switch {
		case ch == "":
			continue
		case len(ch) > maxClarifyChoice:
			return Question{}, fmt.Errorf("choice %d is %d bytes; keep each choice under %d", i+1, len(ch), maxClarifyChoice)
		}
		kept = append(kept, ch)
	}
	return Question{SessionID: sessionID, Question: question, Choices: kept}, nil
}

func noUser(q Question) Result {
	return JSON(map[string]any{"question": q.Question, "user_response": nil,
		"error": "no user to ask: this run has nobody to answer questions. Decide yourself, go on, and state the assumption you made."})
}

func nilIfNone(list []string) any {
	if len(list) == 0 {
		return nil
	}
	return list
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ChoiceAnswer maps a person's reply to a question with choices: a number
// 1..len(choices) picks that choice, anything else is their own answer.
func ChoiceAnswer(reply string, choices []string) string {
	reply = strings.TrimSpace(reply)
	var n int
	if _, err := fmt.Sscanf(reply, "%d", &n); err == nil && fmt.Sprint(n) == reply && n >= 1 && n <= len(choices) {
		return choices[n-1]
	}
	return reply
}
