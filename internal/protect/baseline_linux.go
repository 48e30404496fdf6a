package protect

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
)

// baseline is what a Watch holds of its workspace's start, as
// Watch.Baseline writes it.
type baseline struct {
	Workspace  string   `json:"workspace"`
	Known      []string `json:"known"`
	Present    []string `json:"present"`
	TopExisted []string `json:"top_existed"`
	Bound      []string `json:"bound,omitempty"`
}

// Baseline returns what w holds of the workspace as it was at w's start
// (and what was accepted since) as JSON, for ResumeWatch: the findings
// known then, the protected entries present, the top-level repository
// files that existed and the files bound read-only. It is nil for a nil
// Watch.
func (w *Watch) Baseline() []byte {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var top []string
	for name, existed := range w.topExisted {
		if existed {
			top = append(top, name)
		}
	}
	slices.Sort(top)
	b, _ := json.Marshal(baseline{Workspace: w.workspace, Known: sortedKeys(w.known), Present: sortedKeys(w.present),
		TopExisted: top, Bound: sortedKeys(w.bound)})
	return b
}

// SavedWorkspace is the workspace a Baseline describes, "" when data is
// not one.
func SavedWorkspace(data []byte) string {
	var b baseline
	if json.Unmarshal(data, &b) != nil {
		return ""
	}
	return b.Workspace
}

// ResumeWatch returns a Watch of workspace whose start is the one data
// describes (Baseline of an earlier Watch of s on the same workspace,
// kept until that Watch's last check): what changed since that start is
// found by the next Check, even when the earlier Watch's own process
// ended before it checked. The error says data does not describe a start
// of workspace (another workspace, or not a Baseline).
func (s Set) ResumeWatch(workspace string, data []byte) (*Watch, error) {
	if s.Empty() || workspace == "" {
		return nil, nil
	}
	var b baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, err
	}
	if b.Workspace != workspace {
		return nil, errors.New("the saved baseline is of another workspace: " + b.Workspace)
	}
	w := &Watch{set: s, workspace: workspace, known: setOf(b.Known), present: setOf(b.Present), topExisted: setOf(b.TopExisted)}
	if b.Bound != nil {
		w.bound = setOf(b.Bound)
	}
	return w, nil
}

func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}

func setOf(keys []string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}
