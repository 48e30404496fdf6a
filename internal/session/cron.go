package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/internal/cron"
)

// CronSource is the state.db source of the sessions cron runs create.
const CronSource = "cron"

// RunCron runs a cron job's prompt (with its skills loaded) in a new
// session of source "cron" and returns the final answer: a cron.RunFunc.
// Nobody answers approvals in such a session, so a dangerous command is
// denied (Hermes: approvals.cron_mode deny). Known secret values in the
// answer are redacted: it is written to a file and sent to chats.
func (rt *Runtime) RunCron(ctx context.Context, j cron.Job) (string, error) {
	text, err := rt.PreloadSkills(j.Skills, j.Prompt)
	if err != nil {
		return "", fmt.Errorf("cron job %s: loading skills: %w", j.Name, err)
	}
	s, err := rt.Open(ctx, OpenOptions{Source: CronSource, Platform: CronSource})
	if err != nil {
		return "", err
	}
	defer s.Close()
	s.cronOrigin = j.Origin
	t, _, err := s.Send(ctx, text, SendOptions{})
	if err != nil {
		return "", err
	}
	res, err := t.Wait(context.WithoutCancel(ctx)) // the turn ends with ctx
	if err != nil {
		return "", err
	}
	return rt.redact.Redact(res.Text), nil
}

// isCronSession reports whether session id is a cron run.
func (rt *Runtime) isCronSession(id string) bool {
	s := rt.lookup(id)
	return s != nil && s.source == CronSource
}

// chatOrigin returns "<platform>:<chat_id>[:<thread_id>]" for a session
// opened under a chat platform's key ("telegram:dm:42" → telegram:42,
// "telegram:group:-100:7" → telegram:-100, "slack:thread:C1:T9" →
// slack:C1:T9); "" for the CLI, the API server and unknown keys.
//
// A cron run answers for the chat its job was made from (the job's
// origin), so a job cannot list the other chats' jobs and deliver them.
func (rt *Runtime) chatOrigin(id string) string {
	if s := rt.lookup(id); s != nil && s.source == CronSource {
		return s.cronOrigin
	}
	key, err := rt.keys.KeyOf(context.Background(), id)
	if err != nil {
		return "" // no origin: the run answers for no chat
	}
	return originOfKey(key)
}

// originOfKey reads the chat out of a session key. The gateway's keys
// carry Hermes Agent's "agent:main:" prefix ("agent:main:telegram:dm:42");
// in its group keys the part after the channel is a user (a group
// channel) or a thread, which the key does not tell apart, so they
// deliver to the channel.
func originOfKey(key string) string {
	if rest, ok := strings.CutPrefix(key, "agent:"); ok {
		_, key, _ = strings.Cut(rest, ":") // the agent's name
		if p := strings.Split(key, ":"); len(p) >= 3 && p[1] == "group" && p[2] != "" {
			return p[0] + ":" + p[2]
		}
	}
	p := strings.Split(key, ":")
	if len(p) < 3 || p[0] == "api" || p[0] == "acp" || p[0] == "cli" || p[2] == "" {
		return ""
	}
	switch p[1] {
	case "dm", "group", "channel":
		return p[0] + ":" + p[2]
	case "thread":
		if len(p) >= 4 && p[3] != "" {
			return p[0] + ":" + p[2] + ":" + p[3]
		}
		return p[0] + ":" + p[2]
	}
	return ""
}
