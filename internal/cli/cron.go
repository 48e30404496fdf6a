package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/gateway"
	"github.com/hermes-go/hermes/internal/session"
)

// newCronCmd is `hermes cron` ("cli-commands.md" cron, "features/cron.md"):
// manage the jobs in HERMES_HOME/cron/jobs.json. The gateway's ticker runs
// them; `hermes cron tick` runs the due ones once, for system cron.
func (a *App) newCronCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "cron", Short: "schedule prompts: list, add, edit, pause, resume, run, remove, status, tick",
		Args: unknownCommand, RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.newCronListCmd(), a.newCronAddCmd(), a.newCronEditCmd(),
		a.newCronToggleCmd("pause", true), a.newCronToggleCmd("resume", false),
		a.newCronRunCmd(), a.newCronRemoveCmd(), a.newCronStatusCmd(), a.newCronTickCmd())
	return cmd
}

// cronJobs opens the cron jobs of this HERMES_HOME: the files under
// cron/, or the database's tables with database.backend postgres;
// closeJobs frees the database connection.
func (a *App) cronJobs(ctx context.Context) (jobs cron.Jobs, closeJobs func() error, err error) {
	cfg, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return nil, nil, err
	}
	return database.OpenCron(ctx, cfg.Config.Database, a.Home(), cfg.Getenv, a.Now)
}

func (a *App) newCronListCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use: "list", Short: "list cron jobs (done one-shot jobs with --all)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cj, closeJobs, err := a.cronJobs(cmd.Context())
			if err != nil {
				return err
			}
			defer closeJobs()
			jobs, err := cj.List()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tSCHEDULE\tSTATE\tNEXT RUN\tLAST RUN\tDELIVER")
			n := 0
			for _, j := range jobs {
				if j.Done() && !all {
					continue
				}
				n++
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Name, j.Schedule, j.Status(),
					when(j.NextRunAt), lastRun(j), j.Deliver)
			}
			if n == 0 {
				fmt.Fprintln(a.Stdout, "No cron jobs. Add one with `hermes cron add \"every 1h\" \"PROMPT\"`.")
				return nil
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also list one-shot jobs that already ran")
	return cmd
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func lastRun(j cron.Job) string {
	if j.LastRunAt.IsZero() {
		return "-"
	}
	return when(j.LastRunAt) + " " + j.LastStatus
}

// cronJobFlags are the job fields add and edit set.
type cronJobFlags struct {
	name, deliver, schedule, prompt string
	skills                          []string
}

func (f *cronJobFlags) add(cmd *cobra.Command, edit bool) {
	cmd.Flags().StringVar(&f.name, "name", "", "job name (default: the prompt's first words)")
	cmd.Flags().StringVar(&f.deliver, "deliver", "", "where the answer goes: local (HERMES_HOME/cron/output), origin, or PLATFORM:CHAT_ID (e.g. telegram:123456)")
	cmd.Flags().StringSliceVar(&f.skills, "skill", nil, "skill to load for the run (repeat or comma-separate)")
	if edit {
		cmd.Flags().StringVar(&f.schedule, "schedule", "", "new schedule")
		cmd.Flags().StringVar(&f.prompt, "prompt", "", "new prompt")
	}
}

func (a *App) newCronAddCmd() *cobra.Command {
	var f cronJobFlags
	cmd := &cobra.Command{
		Use: "add SCHEDULE PROMPT", Aliases: []string{"create"},
		Short: "add a job: SCHEDULE is a cron expression (\"0 9 * * 1-5\"), \"every 30m\" or \"in 2h\"",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cj, closeJobs, err := a.cronJobs(cmd.Context())
			if err != nil {
				return err
			}
			defer closeJobs()
			j, err := cj.Add(cron.Job{Schedule: args[0], Prompt: args[1], Name: f.name, Deliver: f.deliver, Skills: f.skills})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Added cron job %s (%s): next run %s, delivered %s.\n", j.ID, j.Name, when(j.NextRunAt), j.Deliver)
			return nil
		},
	}
	f.add(cmd, false)
	return cmd
}

func (a *App) newCronEditCmd() *cobra.Command {
	var f cronJobFlags
	cmd := &cobra.Command{
		Use: "edit JOB", Short: "change a job's schedule, prompt, name, delivery or skills", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			if fl.NFlag() == 0 {
				return fmt.Errorf("nothing to change: give --schedule, --prompt, --name, --deliver or --skill")
			}
			cj, closeJobs, err := a.cronJobs(cmd.Context())
			if err != nil {
				return err
			}
			defer closeJobs()
			j, err := cj.Update(args[0], func(j *cron.Job) error {
				for flag, dst := range map[string]*string{"schedule": &j.Schedule, "prompt": &j.Prompt, "name": &j.Name, "deliver": &j.Deliver} {
					if fl.Changed(flag) {
						v, _ := fl.GetString(flag)
						*dst = v
					}
				}
				if fl.Changed("skill") {
					j.Skills = f.skills
				}
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Updated cron job %s (%s): %s, next run %s.\n", j.ID, j.Name, j.Schedule, when(j.NextRunAt))
			return nil
		},
	}
	f.add(cmd, true)
	return cmd
}

func (a *App) newCronToggleCmd(verb string, pause bool) *cobra.Command {
	return &cobra.Command{
		Use: verb + " JOB", Short: verb + " a job", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cj, closeJobs, err := a.cronJobs(cmd.Context())
			if err != nil {
				return err
			}
			defer closeJobs()
			j, err := cj.Update(args[0], func(j *cron.Job) error { j.Paused = pause; return nil })
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Cron job %s (%s) is %s.\n", j.ID, j.Name, j.Status())
			return nil
		},
	}
}

func (a *App) newCronRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use: "remove JOB", Aliases: []string{"rm", "delete"}, Short: "remove a job (its output files stay)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cj, closeJobs, err := a.cronJobs(cmd.Context())
			if err != nil {
				return err
			}
			defer closeJobs()
			j, err := cj.Remove(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Removed cron job %s (%s).\n", j.ID, j.Name)
			return nil
		},
	}
}

func (a *App) newCronRunCmd() *cobra.Command {
	return &cobra.Command{
		Use: "run JOB", Short: "run a job now, in the foreground (its schedule stays)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withCronScheduler(cmd.Context(), func(s *cron.Scheduler) error {
				r, err := s.RunNow(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				a.printRun(r)
				if r.Status != "ok" {
					return &ExitError{Code: 1, Silent: true}
				}
				return nil
			})
		},
	}
}

func (a *App) newCronTickCmd() *cobra.Command {
	return &cobra.Command{
		Use: "tick", Short: "run the due jobs once and exit (for system cron: `* * * * * hermes cron tick`)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withCronScheduler(cmd.Context(), func(s *cron.Scheduler) error {
				runs, err := s.Tick(cmd.Context())
				if err != nil {
					return err
				}
				failed := 0
				for _, r := range runs {
					a.printRun(r)
					if r.Status != "ok" {
						failed++
					}
				}
				if failed > 0 {
					return &ExitError{Code: 1, Silent: true}
				}
				return nil
			})
		},
	}
}

func (a *App) printRun(r cron.Run) {
	msg := fmt.Sprintf("cron job %s (%s): %s", r.JobID, r.Name, r.Status)
	if r.Error != "" {
		msg += ": " + r.Error
	}
	if r.Delivered != "" {
		msg += "; delivered to " + r.Delivered
	}
	if r.Output != "" {
		msg += "; output in " + r.Output
	}
	fmt.Fprintln(a.Stdout, msg)
}

func (a *App) newCronStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use: "status", Short: "show whether a gateway ticks the jobs, the next due job and the last runs", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, closeJobs, err := a.cronJobs(cmd.Context())
			if err != nil {
				return err
			}
			defer closeJobs()
			jobs, err := st.List()
			if err != nil {
				return err
			}
			if g := a.gatewayState(); g.Running {
				fmt.Fprintf(a.Stdout, "Ticker: running (hermes gateway, pid %d)\n", g.PID)
			} else {
				fmt.Fprintln(a.Stdout, "Ticker: not running; start it with `hermes gateway start`, or run `hermes cron tick` from system cron")
			}
			active, paused := 0, 0
			var next *cron.Job
			for i, j := range jobs {
				switch {
				case j.Paused:
					paused++
				case !j.Done():
					active++
					if next == nil || j.NextRunAt.Before(next.NextRunAt) {
						next = &jobs[i]
					}
				}
			}
			fmt.Fprintf(a.Stdout, "Jobs: %d active, %d paused\n", active, paused)
			if next != nil {
				fmt.Fprintf(a.Stdout, "Next: %s (%s) at %s\n", next.Name, next.ID, when(next.NextRunAt))
			}
			runs, err := st.Runs(5)
			if err != nil {
				return err
			}
			for _, r := range runs {
				line := fmt.Sprintf("Ran: %s %s (%s) %s", when(r.Started), r.Name, r.JobID, r.Status)
				if r.Error != "" {
					line += ": " + r.Error
				}
				fmt.Fprintln(a.Stdout, line)
			}
			return nil
		},
	}
}

// withCronScheduler runs fn with a scheduler whose runs go through a
// session runtime built on first use (a tick with nothing due builds
// none) and whose deliveries go to the platforms configured in the
// environment.
func (a *App) withCronScheduler(ctx context.Context, fn func(*cron.Scheduler) error) error {
	cfg, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return err
	}
	jobs, closeJobs, err := database.OpenCron(ctx, cfg.Config.Database, a.Home(), cfg.Getenv, a.Now)
	if err != nil {
		return err
	}
	defer closeJobs()
	var (
		once  sync.Once
		rt    *session.Runtime
		rtErr error
	)
	defer func() {
		if rt != nil {
			rt.Close()
		}
	}()
	run := func(ctx context.Context, j cron.Job) (string, error) {
		once.Do(func() {
			o := a.sessionOptions(cfg, &chatOptions{})
			o.Platform, o.Lock = session.CronSource, a.turnLock("hermes cron")
			rt, rtErr = session.New(context.WithoutCancel(ctx), o)
		})
		if rtErr != nil {
			return "", rtErr
		}
		return rt.RunCron(ctx, j)
	}
	s := a.cronScheduler(cfg, jobs, run)
	return fn(s)
}

// cronScheduler builds the scheduler of this HERMES_HOME: timeout from
// HERMES_CRON_TIMEOUT (seconds), parallel runs from
// HERMES_CRON_MAX_PARALLEL, deliveries through the configured platforms.
func (a *App) cronScheduler(cfg *config.Loaded, jobs cron.Jobs, run cron.RunFunc) *cron.Scheduler {
	s := &cron.Scheduler{
		Store: jobs, Run: run, Deliver: a.cronDeliverer(cfg),
		Warn: func(msg string) { fmt.Fprintln(a.Stderr, "hermes:", msg) },
	}
	if n, ok := envInt(cfg, "HERMES_CRON_TIMEOUT", a.Stderr); ok {
		s.Timeout = time.Duration(n) * time.Second
	}
	if n, ok := envInt(cfg, "HERMES_CRON_MAX_PARALLEL", a.Stderr); ok {
		s.MaxParallel = n
	}
	return s
}

// envInt reads a positive integer variable; a bad value is a warning
// naming it, and the default applies.
func envInt(cfg *config.Loaded, name string, warn io.Writer) (int, bool) {
	v := strings.TrimSpace(cfg.Getenv(name))
	if v == "" {
		return 0, false
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
		fmt.Fprintf(warn, "hermes: warning: %s=%q is not a positive whole number; using the default\n", name, v)
		return 0, false
	}
	return n, true
}

// cronDeliverer returns the deliverers of the platforms configured in
// the environment (today: Telegram).
func (a *App) cronDeliverer(cfg *config.Loaded) cron.Deliverer {
	p := cron.Deliverers{}
	if token := cfg.Getenv("TELEGRAM_BOT_TOKEN"); token != "" {
		p["telegram"] = &gateway.TelegramDeliverer{Token: token, BaseURL: cfg.Getenv("TELEGRAM_BASE_URL"), Redact: redactorFor(cfg, a.Environ(), a.Home())}
	}
	return p
}

// redactorFor is the secret redaction of a session runtime on cfg, for
// text sent outside one (cron deliveries).
func redactorFor(cfg *config.Loaded, environ []string, home string) func(string) string {
	return session.NewRedactor(cfg, environ, cfg.Config.Terminal.EnvPassthrough, home).Redact
}
