package cli

import (
	"encoding/json"
	"github.com/hermes-go/hermes/internal/atomicfile"

	"github.com/hermes-go/hermes/internal/llm"
)

// usageReport is the JSON written by --usage-file, with the field names of
// Hermes Agent's `hermes -z --usage-file` ("cli-commands.md").
type usageReport struct {
	// InputTokens excludes cached prompt tokens (counted in CacheRead/CacheWrite).
	InputTokens      int    `json:"input_tokens"`
	OutputTokens     int    `json:"output_tokens"`
	CacheReadTokens  int    `json:"cache_read_tokens"`
	CacheWriteTokens int    `json:"cache_write_tokens"`
	ReasoningTokens  int    `json:"reasoning_tokens"`
	TotalTokens      int    `json:"total_tokens"`
	APICalls         int    `json:"api_calls"`
	Model            string `json:"model"`
	Provider         string `json:"provider"`
	SessionID        string `json:"session_id"`
	Status           string `json:"status"` // completed | failed | cancelled
	Completed        bool   `json:"completed"`
	Failed           bool   `json:"failed"`
	Error            string `json:"error,omitempty"`
}

func newUsageReport(u llm.Usage, apiCalls int, model, provider, sessionID string, runErr error, cancelled bool) usageReport {
	r := usageReport{
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens,
		ReasoningTokens: u.ReasoningTokens,
		TotalTokens:     u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens,
		APICalls:        apiCalls, Model: model, Provider: provider, SessionID: sessionID,
		Status: "completed", Completed: true,
	}
	switch {
	case cancelled:
		r.Status, r.Completed, r.Failed = "cancelled", false, true
	case runErr != nil:
		r.Status, r.Completed, r.Failed, r.Error = "failed", false, true, runErr.Error()
	}
	return r
}

// writeJSONFile writes v as indented JSON to path atomically.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}
