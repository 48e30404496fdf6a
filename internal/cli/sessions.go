package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hermes-go/hermes/internal/atomicfile"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/store/postgres"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// newSessionsCmd is `hermes sessions` ("cli-commands.md" sessions):
// list, show, export, delete, rename and search the sessions kept in
// HERMES_HOME/state.db. Every ID argument also accepts a unique id
// prefix, a title, or "latest".
func (a *App) newSessionsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "list, show, export, delete, rename and search sessions",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.newSessionsListCmd(), a.newSessionsShowCmd(), a.newSessionsExportCmd(),
		a.newSessionsDeleteCmd(), a.newSessionsRenameCmd(), a.newSessionsSearchCmd(), a.newSessionsMigrateCmd())
	return cmd
}

// openSessionStore opens the session store config.yaml's database:
// section chooses (HERMES_HOME/state.db by default) with the app's clock.
func (a *App) openSessionStore() (store.Store, error) {
	l, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return nil, err
	}
	return database.Open(context.Background(), l.Config.Database, a.Home(), l.Getenv, store.WithClock(a.Now))
}

// sessionsInPostgres reports whether config.yaml puts sessions in
// PostgreSQL (database.backend: postgres).
func (a *App) sessionsInPostgres() bool {
	l, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return false
	}
	b, err := database.BackendOf(l.Config.Database)
	return err == nil && b == database.Postgres
}

// readSessionStore runs fn, which only reads, with the session store open;
// on a read-only HERMES_HOME (where opening for writing fails) the store is
// opened read-only.
func (a *App) readSessionStore(fn func(st store.Store) error) error {
	st, err := a.openSessionStore()
	if err != nil {
		var rerr error
		var pe *postgres.OpenError
		if errors.As(err, &pe) {
			return err // PostgreSQL: state.db is not where the sessions are
		}
		if st, rerr = store.OpenReadOnly(filepath.Join(a.Home(), store.FileName), store.WithClock(a.Now)); rerr != nil {
			return err // the reason writing failed says more than the read-only attempt
		}
	}
	defer st.Close()
	return fn(st)
}

// withSessionStore runs fn with the session store open.
func (a *App) withSessionStore(fn func(st store.Store) error) error {
	st, err := a.openSessionStore()
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

func (a *App) newSessionsListCmd() *cobra.Command {
	var source string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list sessions, most recent first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return fmt.Errorf("--limit %d: give the number of sessions to list (1 or more)", limit)
			}
			return a.readSessionStore(func(st store.Store) error {
				list, err := st.List(cmd.Context(), store.ListOptions{Limit: limit, Source: source})
				if err != nil {
					return err
				}
				if len(list) == 0 && source != "" {
					fmt.Fprintf(a.Stdout, "No sessions from source %q (sources are cli, oneshot, ...; leave out --source to list all).\n", source)
					return nil
				}
				if len(list) == 0 {
					fmt.Fprintln(a.Stdout, "No sessions yet.")
					return nil
				}
				w := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tUPDATED\tSOURCE\tMSGS\tTITLE / FIRST PROMPT")
				for _, s := range list {
					label := s.Title
					if label == "" {
						label = sessionClip(s.Preview, 60)
					}
					label = termsafe.Clean(label) // from a chat or the model
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", s.ID, a.sessionTime(s.UpdatedAt), s.Source, s.MessageCount, label)
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "only sessions from this source (cli, oneshot, cron...)")
	cmd.Flags().IntVar(&limit, "limit", 20, "maximum sessions to list")
	return cmd
}

func (a *App) newSessionsShowCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "print a session's details and conversation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.readSessionStore(func(st store.Store) error {
				s, err := st.Resolve(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				msgs, err := st.StoredMessages(cmd.Context(), s.ID, all)
				if err != nil {
					return err
				}
				return writeSessionMarkdown(a.Stdout, s, msgs, a.sessionTime)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include messages archived by context compression")
	return cmd
}

func (a *App) newSessionsExportCmd() *cobra.Command {
	var format, output string
	cmd := &cobra.Command{
		Use:   "export ID",
		Short: "export a session as JSON lines or Markdown",
		Long: "Export a session. --format jsonl writes one JSON object per line: first the session " +
			`({"type":"session",...}), then each message ({"type":"message","seq":N,...}), archived ones included. ` +
			"--format md writes a readable transcript. Output goes to stdout unless -o FILE is given.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "jsonl" && format != "md" {
				return fmt.Errorf("--format %q: use jsonl or md", format)
			}
			return a.readSessionStore(func(st store.Store) error {
				s, err := st.Resolve(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				var buf bytes.Buffer
				if format == "jsonl" {
					msgs, err := st.StoredMessages(cmd.Context(), s.ID, true)
					if err != nil {
						return err
					}
					err = writeSessionJSONL(&buf, s, msgs)
					if err != nil {
						return err
					}
				} else {
					msgs, err := st.StoredMessages(cmd.Context(), s.ID, false)
					if err != nil {
						return err
					}
					if err := writeSessionMarkdown(&buf, s, msgs, func(t time.Time) string { return t.UTC().Format(time.RFC3339) }); err != nil {
						return err
					}
				}
				if output == "" || output == "-" {
					_, err := a.Stdout.Write(buf.Bytes())
					return err
				}
				if err := atomicfile.Write(output, buf.Bytes(), 0o600); err != nil {
					return fmt.Errorf("writing %s: %w", output, err)
				}
				fmt.Fprintf(a.Stderr, "Exported session %s to %s\n", s.ID, output)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "jsonl", "jsonl or md")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to FILE instead of stdout")
	return cmd
}

func (a *App) newSessionsDeleteCmd() *cobra.Command {
	var yes, keepBox bool
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "delete a session, its messages and its box (asked on a terminal; --keep-box keeps the box)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withSessionStore(func(st store.Store) error {
				s, err := st.Resolve(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if !yes {
					if !a.IsTerminal {
						return fmt.Errorf("not deleting session %s without confirmation; pass --yes", s.ID)
					}
					fmt.Fprintf(a.Stdout, "Delete session %s%s (%d messages)? [y/N] ", s.ID, sessionQuotedTitle(s), s.MessageCount)
					line, _ := bufio.NewReader(a.Stdin).ReadString('\n')
					if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
						fmt.Fprintln(a.Stdout, "Kept.")
						return nil
					}
				}
				if err := st.Delete(cmd.Context(), s.ID); err != nil {
					return err
				}
				fmt.Fprintf(a.Stdout, "Deleted session %s%s\n", s.ID, sessionQuotedTitle(s))
				a.deleteSessionBox(s.ID, keepBox, yes)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (the session's box is deleted too unless --keep-box)")
	cmd.Flags().BoolVar(&keepBox, "keep-box", false, "keep the session's box and its persistent layer (hermes box rm ID deletes it later)")
	return cmd
}

func (a *App) newSessionsRenameCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rename ID TITLE",
		Short: "set a session's title (unique; an empty title clears it)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withSessionStore(func(st store.Store) error {
				s, err := st.Resolve(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				title := strings.Join(args[1:], " ")
				if err := st.SetTitle(cmd.Context(), s.ID, title); err != nil {
					return err
				}
				s, err = st.Session(cmd.Context(), s.ID)
				if err != nil {
					return err
				}
				if s.Title == "" {
					fmt.Fprintf(a.Stdout, "Cleared the title of session %s\n", s.ID)
				} else {
					fmt.Fprintf(a.Stdout, "Session %s is now %q\n", s.ID, s.Title)
				}
				return nil
			})
		},
	}
}

// searchHighlight returns the markers put around matches in search
// snippets: ANSI bold (SGR 1, reset with SGR 0) when stdout is a terminal,
// else [brackets] so that piped output stays plain text.
func (a *App) searchHighlight() [2]string {
	if a.IsTerminal {
		return [2]string{"\x1b[1m", "\x1b[0m"}
	}
	return [2]string{"[", "]"}
}

func (a *App) newSessionsSearchCmd() *cobra.Command {
	var limit int
	var sortOrder, session string
	var roles []string
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "full-text search over all sessions (FTS5 syntax: words, \"phrases\", OR, NOT, prefix*)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sort, err := store.ParseSort(sortOrder)
			if err != nil {
				return fmt.Errorf("--sort: %w", err)
			}
			return a.readSessionStore(func(st store.Store) error {
				o := store.SearchOptions{Query: strings.Join(args, " "), Limit: limit, Sort: sort, Roles: roles,
					Highlight: a.searchHighlight()}
				if session != "" {
					s, err := st.Resolve(cmd.Context(), session)
					if err != nil {
						return err
					}
					o.SessionID = s.ID
				}
				hits, err := st.Search(cmd.Context(), o)
				if err != nil {
					return err
				}
				if len(hits) == 0 {
					fmt.Fprintln(a.Stdout, "No matches.")
					return nil
				}
				for _, h := range hits {
					label := h.Title
					if label != "" {
						label = "  " + fmt.Sprintf("%q", label)
					}
					archived := ""
					if !h.Active {
						archived = " (archived)"
					}
					fmt.Fprintf(a.Stdout, "%s #%d  %s  %s%s%s\n    %s\n", h.SessionID, h.Seq, a.sessionTime(h.Date), h.Role,
						archived, label, strings.Join(strings.Fields(h.Snippet), " "))
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 10, "maximum matches")
	cmd.Flags().StringVar(&sortOrder, "sort", "relevance", "relevance, newest or oldest")
	cmd.Flags().StringSliceVar(&roles, "role", nil, "only these roles (user, assistant, tool, system)")
	cmd.Flags().StringVar(&session, "session", "", "only this session (id, prefix or title)")
	return cmd
}

// sessionTime formats t for a person: local time to the minute.
func (a *App) sessionTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04") }

func sessionQuotedTitle(s store.Session) string {
	if s.Title == "" {
		return ""
	}
	return fmt.Sprintf(" %q", s.Title)
}

// sessionClip shortens s to n runes with an ellipsis.
func sessionClip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// exportedSession is the first line of a JSONL export.
type exportedSession struct {
	Type            string          `json:"type"` // "session"
	ID              string          `json:"id"`
	Title           string          `json:"title,omitempty"`
	Source          string          `json:"source"`
	Model           string          `json:"model,omitempty"`
	Provider        string          `json:"provider,omitempty"`
	Cwd             string          `json:"cwd,omitempty"`
	SystemPrompt    string          `json:"system_prompt,omitempty"`
	StartedAt       time.Time       `json:"started_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	EndedAt         *time.Time      `json:"ended_at,omitempty"`
	EndReason       string          `json:"end_reason,omitempty"`
	MessageCount    int             `json:"message_count"`
	ToolCallCount   int             `json:"tool_call_count"`
	Usage           any             `json:"usage"`
	APICallCount    int             `json:"api_call_count"`
	ParentSessionID string          `json:"parent_session_id,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
}

// exportedMessage is one message line of a JSONL export: the llm.Message
// fields plus its place in the session.
type exportedMessage struct {
	Type string `json:"type"` // "message"
	Seq  int64  `json:"seq"`
	llm.Message
	Archived  bool      `json:"archived,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func writeSessionJSONL(w io.Writer, s store.Session, msgs []store.StoredMessage) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	head := exportedSession{Type: "session", ID: s.ID, Title: s.Title, Source: s.Source, Model: s.Model,
		Provider: s.Provider, Cwd: s.Cwd, SystemPrompt: s.SystemPrompt, StartedAt: s.StartedAt, UpdatedAt: s.UpdatedAt,
		EndReason: s.EndReason, MessageCount: s.MessageCount, ToolCallCount: s.ToolCallCount, Usage: s.Usage,
		APICallCount: s.APICallCount, ParentSessionID: s.ParentSessionID, Metadata: s.Metadata}
	if !s.EndedAt.IsZero() {
		head.EndedAt = &s.EndedAt
	}
	if err := enc.Encode(head); err != nil {
		return err
	}
	for _, m := range msgs {
		line := exportedMessage{Type: "message", Seq: m.Seq, Message: m.Message, Archived: !m.Active, CreatedAt: m.CreatedAt}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// writeSessionMarkdown renders a session as a Markdown transcript: a header with
// the session's details, then one section per message; tool arguments and
// results go in code fences longer than any backtick run they contain.
func writeSessionMarkdown(w io.Writer, s store.Session, msgs []store.StoredMessage, when func(time.Time) string) error {
	var b strings.Builder
	title := s.Title
	if title == "" {
		title = "Session " + s.ID
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	fmt.Fprintf(&b, "- Session: `%s`\n- Source: %s\n", s.ID, s.Source)
	if s.Model != "" {
		fmt.Fprintf(&b, "- Model: %s", s.Model)
		if s.Provider != "" {
			fmt.Fprintf(&b, " (%s)", s.Provider)
		}
		b.WriteString("\n")
	}
	if s.Cwd != "" {
		fmt.Fprintf(&b, "- Directory: `%s`\n", s.Cwd)
	}
	fmt.Fprintf(&b, "- Started: %s\n- Updated: %s\n", when(s.StartedAt), when(s.UpdatedAt))
	if !s.EndedAt.IsZero() {
		fmt.Fprintf(&b, "- Ended: %s (%s)\n", when(s.EndedAt), s.EndReason)
	}
	fmt.Fprintf(&b, "- Messages: %d, tool calls: %d, API calls: %d\n", s.MessageCount, s.ToolCallCount, s.APICallCount)
	u := s.Usage
	fmt.Fprintf(&b, "- Tokens: %d in, %d out, %d cache read, %d cache write, %d reasoning\n",
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens)
	for _, m := range msgs {
		heading := map[llm.Role]string{llm.RoleUser: "User", llm.RoleAssistant: "Assistant",
			llm.RoleSystem: "System", llm.RoleTool: "Tool result"}[m.Role]
		if m.Role == llm.RoleTool && m.ToolName != "" {
			heading += ": " + m.ToolName
		}
		if m.IsError {
			heading += " (error)"
		}
		if !m.Active {
			heading += " (archived)"
		}
		fmt.Fprintf(&b, "\n## %s\n\n_#%d · %s_\n\n", heading, m.Seq, when(m.CreatedAt))
		if m.Reasoning != "" {
			fmt.Fprintf(&b, "<details><summary>Reasoning</summary>\n\n%s\n\n</details>\n\n", m.Reasoning)
		}
		switch {
		case m.Role == llm.RoleTool:
			writeSessionFence(&b, "", m.Content)
		case m.Content != "":
			b.WriteString(strings.TrimRight(m.Content, "\n") + "\n\n")
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "**Tool call** `%s`\n\n", c.Name)
			args := c.Arguments
			var pretty bytes.Buffer
			if json.Indent(&pretty, []byte(args), "", "  ") == nil {
				args = pretty.String()
			}
			writeSessionFence(&b, "json", args)
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func writeSessionFence(b *strings.Builder, lang, text string) {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	fmt.Fprintf(b, "%s%s\n%s\n%s\n\n", fence, lang, strings.TrimRight(text, "\n"), fence)
}
