package session

import (
	"context"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/tool"
)

// Review runs the self-improvement review after a busy turn when
// memory.nudge_interval or skills.creation_nudge_interval asks for it, and
// returns the changes it made, one line each. Call it while the session
// is idle.
func (s *Session) Review(ctx context.Context, res agent.TurnResult) ([]string, error) {
	c := s.rt.cfg
	threshold := 0
	var names []string
	if n := c.Memory.NudgeInterval; n > 0 && res.ToolCalls >= n {
		threshold, names = n, append(names, "memory")
	}
	if n := c.Skills.CreationNudgeInterval; n > 0 && res.ToolCalls >= n {
		threshold, names = n, append(names, "skills_list", "skill_view", "skill_manage")
	}
	if threshold == 0 {
		return nil, nil
	}
	reg := tool.NewRegistry()
	for _, n := range names {
		if t, ok := s.tools.Get(n); ok {
			reg.Add(t)
		}
	}
	if len(reg.Names()) == 0 {
		return nil, nil // --toolsets left the review nothing to change: skip the model call
	}
	return agent.Review(ctx, agent.ReviewOptions{Provider: s.rt.provider, Model: s.rt.model, Tools: reg}, s.state)
}
