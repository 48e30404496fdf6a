package agent

import (
	"context"
	"fmt"

	"github.com/hermes-go/hermes/internal/llm"
)

// Route is one provider of a turn's fallback chain (Hermes
// "fallback_providers"): the provider to call, its slug for notices and
// the model it is asked for.
type Route struct {
	Provider llm.Provider
	Name     string // provider slug: openrouter, anthropic, custom...
	Model    string
}

// label names r for a person: "openrouter/model".
func (r Route) label() string {
	if r.Name == "" {
		return r.Model
	}
	return r.Name + "/" + r.Model
}

// route is the provider the turn calls now: the session's own (its model
// may have been switched with SetModel) or, after failures, entry i-1 of
// Options.Fallbacks.
func (a *Agent) route(i int) Route {
	if i == 0 || i > len(a.opts.Fallbacks) {
		name := a.opts.ProviderName
		if name == "" && a.opts.Provider != nil {
			name = a.opts.Provider.Name()
		}
		return Route{Provider: a.opts.Provider, Name: name, Model: a.Model()}
	}
	return a.opts.Fallbacks[i-1]
}

// streamFallingBack is streamRetrying on the turn's current route; when
// that fails with an error another provider may not share
// (llm.FallsBack) and a fallback is left, the turn moves on to the next
// provider with a notice and stays there until it ends (Hermes: the
// fallback is turn-scoped, the next user turn starts on the primary).
// When every provider failed the error is an *llm.FallbackError naming
// them all.
func (a *Agent) streamFallingBack(ctx context.Context, s *Session, withTools bool, res *TurnResult) (llm.Response, error) {
	for {
		r := a.route(res.route)
		resp, err := a.streamRetrying(ctx, s, withTools, r)
		if err == nil {
			res.Model = r.Model
			return resp, nil
		}
		if ctx.Err() != nil || !llm.FallsBack(err) {
			return resp, err
		}
		res.tried = appendOnce(res.tried, r.label())
		if res.route >= len(a.opts.Fallbacks) {
			if len(res.tried) > 1 {
				return resp, &llm.FallbackError{Tried: res.tried, Err: err}
			}
			return resp, err
		}
		res.route++
		next := a.route(res.route)
		a.emit(Event{Kind: EventNotice, Fallback: true,
			Text: fmt.Sprintf("%s failed (%s); continuing with fallback %s", r.label(), oneLine(err), next.label())})
	}
}

func appendOnce(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}

// oneLine is err's message on one line, at most 200 bytes.
func oneLine(err error) string {
	return truncate(firstLine(err.Error()), 200)
}
