package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-go/hermes/internal/cron"
)

// Cron is cron.Jobs in tables cron_jobs and cron_runs (schema version
// 3), shared by the schedulers of every replica on the database:
//   - Claim selects the due rows FOR UPDATE SKIP LOCKED, so two replicas
//     claiming at once take disjoint jobs, and advances each job's next
//     run in the same transaction, so a job is claimed once per due time.
//   - A job's run lock is a session-level advisory lock (the two-key
//     form: this schema's namespace, hashtext of "cron:" and the job id)
//     on one connection this Cron keeps for them all. PostgreSQL releases
//     it when the connection ends, so a replica that dies mid-run frees
//     its jobs and the next claim records the run as interrupted.
//
// Output files stay in Dir, on the machine that ran the job.
type Cron struct {
	db  *DB
	dir string

	mu   sync.Mutex
	conn *pgxpool.Conn   // carries the run locks; nil until the first
	held map[string]bool // job ids whose run lock this Cron holds
}

var _ cron.Jobs = (*Cron)(nil)

// Cron returns the database's cron jobs; run output goes under
// home/cron on this machine.
func (db *DB) Cron(home string) *Cron {
	return &Cron{db: db, dir: filepath.Join(home, "cron"), held: map[string]bool{}}
}

// Dir implements cron.Jobs.
func (c *Cron) Dir() string { return c.dir }

// Now implements cron.Jobs.
func (c *Cron) Now() time.Time { return c.db.now() }

// jobError carries an error of cron's own (not found, invalid, a name
// taken, a running job) out of a transaction unwrapped.
type jobError struct{ error }

// fail returns a jobError's error as it is and names the database in others.
func (c *Cron) fail(what string, err error) error {
	var je jobError
	if errors.As(err, &je) {
		return je.error
	}
	return fmt.Errorf("cron: %s in %s: %w", what, c.db.where, err)
}

// queryJobs returns the jobs a query selects (column job).
func queryJobs(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args ...any) ([]cron.Job, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make([]cron.Job, 0, len(texts))
	for _, t := range texts {
		var j cron.Job
		if err := json.Unmarshal([]byte(t), &j); err != nil {
			return nil, fmt.Errorf("a cron_jobs row is not valid JSON: %w", err)
		}
		out = append(out, j)
	}
	return out, nil
}

// byRef selects the jobs ref may name (id, name or id prefix); lock
// appends FOR UPDATE. cron.Find picks among them.
func byRef(ref, lock string) (string, []any) {
	prefix := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.TrimSpace(ref)) + "%"
	return `SELECT job FROM cron_jobs WHERE id = $1 OR name = $1 OR id LIKE $2 ORDER BY created_at, seq` + lock,
		[]any{strings.TrimSpace(ref), prefix}
}

// List implements cron.Jobs.
func (c *Cron) List() ([]cron.Job, error) {
	jobs, err := queryJobs(context.Background(), c.db.pool, `SELECT job FROM cron_jobs ORDER BY created_at, seq`)
	if err != nil {
		return nil, c.fail("listing jobs", err)
	}
	return jobs, nil
}

// Get implements cron.Jobs.
func (c *Cron) Get(ref string) (cron.Job, error) {
	sql, args := byRef(ref, "")
	jobs, err := queryJobs(context.Background(), c.db.pool, sql, args...)
	if err != nil {
		return cron.Job{}, c.fail("reading job "+ref, err)
	}
	i, err := cron.Find(jobs, ref)
	if err != nil {
		return cron.Job{}, err
	}
	return jobs[i], nil // (cron.Find's errors are cron's own)
}

// Add implements cron.Jobs.
func (c *Cron) Add(j cron.Job) (cron.Job, error) {
	j, err := cron.Prepare(j, c.db.now())
	if err != nil {
		return cron.Job{}, err
	}
	ctx := context.Background()
	err = c.db.inTx(ctx, func(tx pgx.Tx) error {
		if err := c.nameFree(ctx, tx, j); err != nil {
			return err
		}
		return c.write(ctx, tx, j, true)
	})
	if err != nil {
		return cron.Job{}, c.fail("adding job "+j.Name, err)
	}
	return j, nil
}

// nameFree fails with cron.NameTaken when a job other than j has j's
// name (the unique index catches a concurrent twin: see write).
func (c *Cron) nameFree(ctx context.Context, tx pgx.Tx, j cron.Job) error {
	other, err := queryJobs(ctx, tx, `SELECT job FROM cron_jobs WHERE name = $1 AND id <> $2`, j.Name, j.ID)
	if err != nil {
		return err
	}
	if len(other) > 0 {
		return jobError{cron.NameTaken(other[0])}
	}
	return nil
}

// write inserts (insert) or updates job j's row.
func (c *Cron) write(ctx context.Context, tx pgx.Tx, j cron.Job, insert bool) error {
	body, err := json.Marshal(j)
	if err != nil {
		return err
	}
	var next *int64
	if !j.NextRunAt.IsZero() {
		ms := millis(j.NextRunAt)
		next = &ms
	}
	if insert {
		_, err = tx.Exec(ctx, `INSERT INTO cron_jobs (id, name, created_at, next_run_at, paused, job) VALUES ($1, $2, $3, $4, $5, $6)`,
			j.ID, j.Name, millis(j.CreatedAt), next, j.Paused, string(body))
	} else {
		_, err = tx.Exec(ctx, `UPDATE cron_jobs SET name = $2, next_run_at = $3, paused = $4, job = $5 WHERE id = $1`,
			j.ID, j.Name, next, j.Paused, string(body))
	}
	if isUnique(err, "cron_jobs_name_key") {
		return jobError{fmt.Errorf("a cron job named %q was just added by another process; pick another --name", j.Name)}
	}
	return err
}

// Update implements cron.Jobs.
func (c *Cron) Update(ref string, fn func(*cron.Job) error) (cron.Job, error) {
	var out cron.Job
	ctx := context.Background()
	err := c.db.inTx(ctx, func(tx pgx.Tx) error {
		sql, args := byRef(ref, " FOR UPDATE")
		jobs, err := queryJobs(ctx, tx, sql, args...)
		if err != nil {
			return err
		}
		i, err := cron.Find(jobs, ref)
		if err != nil {
			return jobError{err}
		}
		if out, err = cron.Apply(jobs[i], fn, c.db.now()); err != nil {
			return jobError{err}
		}
		if err := c.nameFree(ctx, tx, out); err != nil {
			return err
		}
		return c.write(ctx, tx, out, false)
	})
	if err != nil {
		return cron.Job{}, c.fail("updating job "+ref, err)
	}
	return out, nil
}

// Remove implements cron.Jobs.
func (c *Cron) Remove(ref string) (cron.Job, error) {
	var out cron.Job
	ctx := context.Background()
	err := c.db.inTx(ctx, func(tx pgx.Tx) error {
		sql, args := byRef(ref, " FOR UPDATE")
		jobs, err := queryJobs(ctx, tx, sql, args...)
		if err != nil {
			return err
		}
		i, err := cron.Find(jobs, ref)
		if err != nil {
			return jobError{err}
		}
		out = jobs[i]
		_, err = tx.Exec(ctx, `DELETE FROM cron_jobs WHERE id = $1`, out.ID)
		return err
	})
	if err != nil {
		return cron.Job{}, c.fail("removing job "+ref, err)
	}
	return out, nil
}

// AppendRun implements cron.Jobs.
func (c *Cron) AppendRun(r cron.Run) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = c.db.pool.Exec(context.Background(), `INSERT INTO cron_runs (job_id, started_at, run) VALUES ($1, $2, $3)`,
		r.JobID, millis(r.Started), string(body))
	if err != nil {
		return c.fail("recording a run of job "+r.JobID, err)
	}
	return nil
}

// Runs implements cron.Jobs.
func (c *Cron) Runs(n int) ([]cron.Run, error) {
	limit := any(nil) // LIMIT NULL: all
	if n > 0 {
		limit = n
	}
	rows, err := c.db.pool.Query(context.Background(),
		`SELECT run FROM (SELECT seq, run FROM cron_runs ORDER BY seq DESC LIMIT $1) last ORDER BY seq`, limit)
	if err != nil {
		return nil, c.fail("reading the run ledger", err)
	}
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, c.fail("reading the run ledger", err)
	}
	out := make([]cron.Run, 0, len(texts))
	for _, t := range texts {
		var r cron.Run
		if json.Unmarshal([]byte(t), &r) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}
