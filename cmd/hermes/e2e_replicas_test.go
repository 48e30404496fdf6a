package main_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/internal/gateway/replicatest"
	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store/postgres/postgrestest"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// replicaConversations is the end-to-end test's scale: the 200
// conversations with HERMES_TEST_REPLICA_CONVERSATIONS=200; 60 by default
// so the test fits a loaded 2-core CI machine.
func replicaConversations() int {
	if n, err := strconv.Atoi(os.Getenv("HERMES_TEST_REPLICA_CONVERSATIONS")); err == nil && n > 0 {
		return n
	}
	return 60
}

// Three `hermes gateway run` replicas (API server, separate HERMES_HOMEs)
// on one PostgreSQL: the official openai npm client round-robins
// conversations of 5 turns across them, each turn chained to the previous
// by previous_response_id, so nearly every turn lands on another replica
// than the last. Replica 0 is killed (SIGKILL) after turn 2; its
// conversations continue on the others. Every answer shows the model saw
// exactly the conversation's inputs in order: nothing lost, duplicated or
// interleaved, every chain intact; the database holds one session per
// conversation with 5 user messages each.
func TestThreeReplicasServeChainedConversationsThroughAKill(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	srv := llmtest.NewServer(t)
	srv.SetResponder(replicatest.SeenModel)
	srv.ForgetBodies()
	c := replicatest.Start(t, replicatest.Options{Bin: hermesBin, N: 3, ModelURL: srv.URL, DatabaseURL: url, Schema: schema})
	convs, turns := replicaConversations(), 5
	res := replicatest.Drive(t, c, replicatest.ClientOptions{Dir: "../../internal/gateway/testdata/openaiclient",
		Conversations: convs, Turns: turns, Concurrency: 12, KillAfterTurn: 2, Kill: 0})
	t.Logf("%d conversations × %d turns: %d answered, %.0f answers/s, p50 %.0f ms, p99 %.0f ms, %d moved from the killed replica",
		convs, turns, res.Answered, res.AnswersPerSecond, res.P50ms, res.P99ms, res.MovedFromKilled)
	if res.Answered != convs*turns || res.Lost+res.Duplicated+res.Interleaved+res.Failed != 0 || res.ChainsIntact != convs {
		t.Fatalf("answered %d of %d; lost %d, duplicated %d, interleaved %d, failed %d; %d chains intact of %d; e.g. %s\nreplica 1:\n%s",
			res.Answered, convs*turns, res.Lost, res.Duplicated, res.Interleaved, res.Failed, res.ChainsIntact, convs,
			res.Examples, c.Replicas[1].Stderr())
	}
	if res.MovedFromKilled == 0 {
		t.Fatal("no conversation answered last by the killed replica continued elsewhere: the kill proved nothing")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var sessions, wrong int
	err = conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE users <> $1 OR answers <> $1) FROM (
		SELECT s.id, count(*) FILTER (WHERE m.role = 'user') AS users, count(*) FILTER (WHERE m.role = 'assistant') AS answers
		FROM `+schema+`.sessions s JOIN `+schema+`.messages m ON m.session_id = s.id WHERE s.source = 'api_server' GROUP BY s.id) x`,
		turns).Scan(&sessions, &wrong)
	if err != nil {
		t.Fatal(err)
	}
	if sessions != convs || wrong != 0 {
		t.Fatalf("the database holds %d API sessions (want %d), %d without exactly %d user messages and answers", sessions, convs, wrong, turns)
	}
}

// Two gateway processes on one PostgreSQL serve one Telegram bot: one
// long-polls (the leader lease); killed with SIGKILL, the other takes the
// bot over within the lease time (2 s here) and answers what was sent
// meanwhile. The fake Bot API never sees two getUpdates consumers at once
// and every update is answered exactly once.
func TestTelegramLeaderFailsOverAcrossReplicaProcesses(t *testing.T) {
	url, schema := postgrestest.Schema(t)
	srv := llmtest.NewServer(t)
	srv.SetResponder(replicatest.SeenModel)
	tg := telegramtest.New("77:REPLICATOKEN")
	defer tg.Close()
	c := replicatest.Start(t, replicatest.Options{Bin: hermesBin, N: 2, ModelURL: srv.URL, DatabaseURL: url, Schema: schema,
		LeaseSeconds: 2, Env: []string{"TELEGRAM_BOT_TOKEN=" + tg.Token, "TELEGRAM_BASE_URL=" + tg.URL, "GATEWAY_ALLOWED_USERS=1,2,3"}})
	leader := -1
	waitfor.Until(t, "a leader", func() bool {
		for i, r := range c.Replicas {
			if strings.Contains(r.Stderr(), "this replica is the leader now") {
				leader = i
				return true
			}
		}
		return false
	})
	users := []int64{1, 2, 3}
	round := func(n int) {
		for _, u := range users {
			tg.SendText(u, u, "private", fmt.Sprintf("r%d", n))
		}
		for _, u := range users {
			tg.WaitSent(t, u, n)
		}
	}
	round(1)
	c.Kill(leader)
	other := c.Replicas[1-leader]
	round(2)
	if !strings.Contains(other.Stderr(), "this replica is the leader now") {
		t.Fatalf("round 2 was answered but the other replica never led:\n%s", other.Stderr())
	}
	round(3)
	for _, u := range users {
		var texts []string
		for _, m := range tg.Sent(u) {
			texts = append(texts, m.Text)
		}
		// One answer per update, in order, in one session per chat that
		// continues across the failover (the chat's key is in the database).
		if want := []string{"seen: r1", "seen: r1|r2", "seen: r1|r2|r3"}; !slices.Equal(texts, want) {
			t.Errorf("user %d got %q, want %q", u, texts, want)
		}
	}
	if n := tg.MaxConcurrentPolls(); n != 1 {
		t.Errorf("the fake Bot API saw %d getUpdates consumers at once", n)
	}
	if strings.Contains(other.Stderr(), tg.Token) {
		t.Errorf("the bot token reached the log")
	}
}
