package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/llm"
)

// CronjobOptions configures the cronjob tool.
type CronjobOptions struct {
	Store *cron.Store
	// Origin returns the "<platform>:<chat_id>[:<thread_id>]" a session
	// talks to ("" for the CLI and the API server): the target of
	// deliver "origin", the default delivery of jobs created from a chat.
	Origin func(sessionID string) string
	// InCron reports whether the session is a cron run; such runs may not
	// schedule jobs (Hermes: cron.allow_agent_scheduling, default off).
	InCron func(sessionID string) bool
	Now    func() time.Time
}

// cronjob is the cronjob tool (Hermes Agent's cronjob / cronjob_manage,
// toolset cronjob): actions create, list, update, pause, resume, run and
// remove on the jobs `hermes cron` manages. The gateway's ticker (or
// `hermes cron tick`) runs them.
type cronjob struct{ o CronjobOptions }

// NewCronjob returns the cronjob tool.
func NewCronjob(o CronjobOptions) Tool {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &cronjob{o: o}
}

func (t *cronjob) Toolset() string { return "cronjob" }

func (t *cronjob) Parallel() bool { return false }

func (t *cronjob) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "cronjob",
		Description: "Schedule prompts to run later or repeatedly as a fresh agent session, with the answer delivered " +
			"to a chat or saved locally. Actions: create (schedule, prompt; optional name, deliver, skills), list, " +
			"update, pause, resume, run (run at the next tick), remove (job_id). schedule: a cron expression " +
			"(\"0 9 * * 1-5\", local time), \"every 30m\", \"every 2h\" or \"in 45m\" (once). deliver: origin (this " +
			"chat, the default in a chat), local (saved under HERMES_HOME/cron/output, the default elsewhere) or " +
			"<platform>:<chat_id>. The prompt runs without this conversation's context: make it self-contained.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["create", "list", "update", "pause", "resume", "run", "remove"]},
    "job_id": {"type": "string", "description": "id or name of the job (update, pause, resume, run, remove)"},
    "schedule": {"type": "string"},
    "prompt": {"type": "string", "description": "self-contained instructions for the run"},
    "name": {"type": "string"},
    "deliver": {"type": "string", "description": "origin, local or <platform>:<chat_id>"},
    "skills": {"type": "array", "items": {"type": "string"}, "description": "skills to load for the run"},
    "skill": {"type": "string", "description": "one skill to load (same as skills: [skill])"}
  },
  "required": ["action"]
}`),
	}
}

type cronjobArgs struct {
	Action   string   `json:"action"`
	JobID    string   `json:"job_id"`
	Schedule *string  `json:"schedule"`
	Prompt   *string  `json:"prompt"`
	Name     *string  `json:"name"`
	Deliver  *string  `json:"deliver"`
	Skills   []string `json:"skills"`
	Skill    string   `json:"skill"`
}

// cronjobView is a job as the model sees it.
type cronjobView struct {
	ID         string   `json:"job_id"`
	Name       string   `json:"name"`
	Schedule   string   `json:"schedule"`
	Prompt     string   `json:"prompt"`
	Skills     []string `json:"skills,omitempty"`
	Deliver    string   `json:"deliver"`
	State      string   `json:"state"`
	NextRunAt  string   `json:"next_run_at,omitempty"`
	LastRunAt  string   `json:"last_run_at,omitempty"`
	LastStatus string   `json:"last_status,omitempty"`
	LastError  string   `json:"last_error,omitempty"`
}

func viewJob(j cron.Job) cronjobView {
	v := cronjobView{ID: j.ID, Name: j.Name, Schedule: j.Schedule, Prompt: j.Prompt, Skills: j.Skills,
		Deliver: j.Deliver, State: j.Status(), LastStatus: j.LastStatus, LastError: j.LastError}
	if !j.NextRunAt.IsZero() {
		v.NextRunAt = j.NextRunAt.Format(time.RFC3339)
	}
	if !j.LastRunAt.IsZero() {
		v.LastRunAt = j.LastRunAt.Format(time.RFC3339)
	}
	return v
}

func (t *cronjob) Run(_ context.Context, call Call) Result {
	var a cronjobArgs
	if err := Decode(call.Args, &a); err != nil {
		return Errorf("%v", err)
	}
	if t.o.Store == nil {
		return Errorf("cron jobs are not available in this run")
	}
	action := strings.ToLower(strings.TrimSpace(a.Action))
	if action != "list" && t.o.InCron != nil && t.o.InCron(call.SessionID) {
		return Errorf("a cron run cannot change cron jobs (cron.allow_agent_scheduling is off)")
	}
	if a.Skill != "" {
		a.Skills = append(a.Skills, a.Skill)
	}
	origin := t.scope(call.SessionID)
	switch action {
	case "create":
		return t.create(call, a)
	case "list":
		jobs, err := t.o.Store.List()
		if err != nil {
			return Errorf("listing cron jobs: %v", err)
		}
		out := []cronjobView{}
		for _, j := range jobs {
			if mine(origin, j) {
				out = append(out, viewJob(j))
			}
		}
		return JSON(map[string]any{"jobs": out})
	case "update", "pause", "resume", "run":
		return t.update(origin, action, a)
	case "remove":
		j, err := t.o.Store.Get(a.JobID)
		if err == nil && !mine(origin, j) {
			err = notThisChats(a.JobID)
		}
		if err == nil {
			j, err = t.o.Store.Remove(j.ID)
		}
		if err != nil {
			return Errorf("%v", err)
		}
		return JSON(map[string]any{"removed": viewJob(j)})
	case "":
		return Errorf("give an action: create, list, update, pause, resume, run or remove")
	}
	return Errorf("unknown action %q: use create, list, update, pause, resume, run or remove", a.Action)
}

func (t *cronjob) create(call Call, a cronjobArgs) Result {
	j := cron.Job{Skills: a.Skills}
	for dst, src := range map[*string]*string{&j.Schedule: a.Schedule, &j.Prompt: a.Prompt, &j.Name: a.Name, &j.Deliver: a.Deliver} {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	if t.o.Origin != nil {
		j.Origin = t.o.Origin(call.SessionID)
	}
	if j.Deliver == "origin" && j.Origin == "" {
		return Errorf("deliver origin needs a chat, and this session has none; use local or <platform>:<chat_id>")
	}
	if err := checkDeliver(j.Origin, j.Deliver); err != nil {
		return Errorf("%v", err)
	}
	j, err := t.o.Store.Add(j)
	if err != nil {
		return Errorf("%v", err)
	}
	return JSON(map[string]any{"created": viewJob(j)})
}

func (t *cronjob) update(origin, action string, a cronjobArgs) Result {
	j, err := t.o.Store.Update(a.JobID, func(j *cron.Job) error {
		if !mine(origin, *j) {
			return notThisChats(a.JobID)
		}
		switch action {
		case "pause":
			j.Paused = true
		case "resume":
			j.Paused = false
		case "run":
			j.NextRunAt = t.o.Now()
		case "update":
			if a.Schedule != nil {
				j.Schedule = strings.TrimSpace(*a.Schedule)
			}
			if a.Prompt != nil {
				j.Prompt = *a.Prompt
			}
			if a.Name != nil {
				j.Name = strings.TrimSpace(*a.Name)
			}
			if a.Deliver != nil {
				j.Deliver = strings.TrimSpace(*a.Deliver)
				if j.Deliver == "origin" && j.Origin == "" {
					return errors.New("deliver origin needs the chat the job was created from, and it has none")
				}
				if err := checkDeliver(origin, j.Deliver); err != nil {
					return err
				}
			}
			if a.Skills != nil {
				j.Skills = a.Skills
			}
		}
		return nil
	})
	if err != nil {
		return Errorf("%v", err)
	}
	return JSON(map[string]any{"job": viewJob(j)})
}

// scope is the chat the session talks to: a session of a chat platform
// sees and changes only the jobs made from its own chat, and delivers
// only there (a model steered by one chat's user, or by text it read,
// must not read another chat's job prompts nor post into another chat).
// "" is the operator's own sessions (CLI, API server, ACP): every job.
func (t *cronjob) scope(sessionID string) string {
	if t.o.Origin == nil {
		return ""
	}
	return t.o.Origin(sessionID)
}

// mine reports whether a session scoped to origin may see and change j.
func mine(origin string, j cron.Job) bool { return origin == "" || j.Origin == origin }

// notThisChats is the answer for another chat's job: the same as for no
// job, so a chat learns nothing about the others' jobs.
func notThisChats(ref string) error {
	return fmt.Errorf("no cron job %q was made from this chat (list shows them)", ref)
}

// checkDeliver refuses a delivery target outside the chat origin (and
// its threads) for a session scoped to a chat.
func checkDeliver(origin, deliver string) error {
	if origin == "" || deliver == "" || deliver == "origin" || deliver == "local" ||
		deliver == origin || strings.HasPrefix(deliver, origin+":") {
		return nil
	}
	return fmt.Errorf("deliver %q: a job made from a chat delivers to that chat (origin) or local; "+
		"the operator sends elsewhere with hermes cron edit ID --deliver", deliver)
}
