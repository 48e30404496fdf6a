package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/responsestore"
	"github.com/hermes-go/hermes/internal/session"
)

// responseObject is an OpenAI Responses API response
// (https://platform.openai.com/docs/api-reference/responses/object).
type responseObject struct {
	ID                 string           `json:"id"`
	Object             string           `json:"object"`
	CreatedAt          int64            `json:"created_at"`
	Status             string           `json:"status"`
	Model              string           `json:"model"`
	PreviousResponseID *string          `json:"previous_response_id"`
	Output             []map[string]any `json:"output"`
	Usage              map[string]any   `json:"usage"`
	Error              map[string]any   `json:"error"`
}

// newResponse starts a response object (status in_progress, no output).
func (s *APIServer) newResponse(previous string) responseObject {
	resp := responseObject{ID: newID("resp_"), Object: "response", CreatedAt: s.cfg.Now().Unix(), Status: "in_progress",
		Model: s.cfg.ModelName, Output: []map[string]any{}}
	if previous != "" {
		resp.PreviousResponseID = &previous
	}
	return resp
}

// outputText is an output_text content part.
func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
}

// messageItem is the assistant message output item msgID with content.
func messageItem(msgID, status string, content []map[string]any) map[string]any {
	return map[string]any{"type": "message", "id": msgID, "status": status, "role": "assistant", "content": content}
}

// complete fills resp with the answer and its usage.
func complete(resp *responseObject, msgID, text string, u llm.Usage) {
	resp.Status = "completed"
	resp.Output = []map[string]any{messageItem(msgID, "completed", []map[string]any{outputText(text)})}
	resp.Usage = map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens,
		"input_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens}, "output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens}}
}

func (s *APIServer) createResponse(w http.ResponseWriter, r *http.Request) {
	body, release, ok := s.readBody(w, r)
	if !ok {
		return
	}
	req, conv, err := parseResponsesRequest(body)
	release()
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	key := r.Header.Get(SessionHeader)
	if req.PreviousResponseID != "" {
		prev, err := s.cfg.Responses.Get(r.Context(), req.PreviousResponseID)
		if errors.Is(err, responsestore.ErrNotFound) {
			writeAPIError(w, http.StatusNotFound, "not_found", fmt.Sprintf("previous_response_id %q is not a stored response (deleted, expired or never created)", req.PreviousResponseID))
			return
		}
		if err != nil {
			writeAPIError(w, http.StatusServiceUnavailable, "server_error", "looking up previous_response_id: "+err.Error())
			return
		}
		key = prev.SessionID
	}
	if key != "" {
		conv.History, conv.System = nil, ""
	}
	sess, err := s.openSession(r.Context(), key, conv)
	if err != nil {
		writeAPIError(w, http.StatusInternalServerError, "server_error", "opening the session: "+err.Error())
		return
	}
	w.Header().Set(SessionHeader, sess.ID())
	resp := s.newResponse(req.PreviousResponseID)
	if req.Stream {
		s.streamResponse(r.Context(), w, sess, conv.Text, resp)
		return
	}
	final, err := s.answer(r.Context(), sess, conv.Text, nil)
	if err != nil {
		writeAPIError(w, http.StatusBadGateway, "upstream_error", err.Error())
		return
	}
	complete(&resp, newID("msg_"), final.Text, final.Result.Usage)
	if err := s.store(r.Context(), resp, sess.ID()); err != nil {
		writeAPIError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// streamResponse answers with the Responses streaming events, in the
// order OpenAI sends them and its SDKs consume them
// (https://platform.openai.com/docs/api-reference/responses-streaming):
// response.created, response.in_progress, response.output_item.added,
// response.content_part.added, response.output_text.delta (one per piece
// the model streamed), response.output_text.done,
// response.content_part.done, response.output_item.done, then
// response.completed — or response.failed when the turn fails. Each event
// carries its type and a sequence_number counting from 0.
func (s *APIServer) streamResponse(ctx context.Context, w http.ResponseWriter, sess *session.Session, text string, resp responseObject) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		writeSSE(w, typ, fields)
		if flusher != nil {
			flusher.Flush()
		}
	}
	msgID := newID("msg_")
	at := func(more map[string]any) map[string]any {
		more["item_id"], more["output_index"], more["content_index"] = msgID, 0, 0
		return more
	}
	emit("response.created", map[string]any{"response": resp})
	emit("response.in_progress", map[string]any{"response": resp})
	emit("response.output_item.added", map[string]any{"output_index": 0, "item": messageItem(msgID, "in_progress", []map[string]any{})})
	emit("response.content_part.added", at(map[string]any{"part": outputText("")}))
	final, err := s.answer(ctx, sess, text, func(ev session.Event) {
		if ev.Kind == session.TextDelta && ev.Text != "" {
			emit("response.output_text.delta", at(map[string]any{"delta": ev.Text, "logprobs": []any{}}))
		}
	})
	if err != nil {
		resp.Status = "failed"
		resp.Error = map[string]any{"code": "server_error", "message": err.Error()}
		emit("response.failed", map[string]any{"response": resp})
		return
	}
	emit("response.output_text.done", at(map[string]any{"text": final.Text, "logprobs": []any{}}))
	emit("response.content_part.done", at(map[string]any{"part": outputText(final.Text)}))
	emit("response.output_item.done", map[string]any{"output_index": 0,
		"item": messageItem(msgID, "completed", []map[string]any{outputText(final.Text)})})
	complete(&resp, msgID, final.Text, final.Result.Usage)
	if err := s.store(ctx, resp, sess.ID()); err != nil {
		resp.Status = "failed"
		resp.Error = map[string]any{"code": "server_error", "message": err.Error()}
		emit("response.failed", map[string]any{"response": resp})
		return
	}
	emit("response.completed", map[string]any{"response": resp})
}

// store keeps resp for previous_response_id and GET /v1/responses/{id}.
func (s *APIServer) store(ctx context.Context, resp responseObject, sessionID string) error {
	body, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	return s.cfg.Responses.Put(ctx, responsestore.Response{ID: resp.ID, SessionID: sessionID, Body: body})
}

func (s *APIServer) getResponse(w http.ResponseWriter, r *http.Request) {
	stored, err := s.cfg.Responses.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, responsestore.ErrNotFound) {
		writeAPIError(w, http.StatusNotFound, "not_found", fmt.Sprintf("response %q not found", r.PathValue("id")))
		return
	}
	if err != nil {
		writeAPIError(w, http.StatusServiceUnavailable, "server_error", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(stored.Body)
}

func (s *APIServer) deleteResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ok, err := s.cfg.Responses.Delete(r.Context(), id)
	if err != nil {
		writeAPIError(w, http.StatusServiceUnavailable, "server_error", err.Error())
		return
	}
	if !ok {
		writeAPIError(w, http.StatusNotFound, "not_found", fmt.Sprintf("response %q not found", id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
}
