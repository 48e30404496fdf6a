package cli

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/gateway"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/store/postgres"
)

// telegramPlatform builds the Telegram platform when TELEGRAM_BOT_TOKEN is
// set. Allowed users come from TELEGRAM_ALLOWED_USERS, else
// GATEWAY_ALLOWED_USERS; GATEWAY_ALLOW_ALL_USERS=true (or
// TELEGRAM_ALLOW_ALL_USERS) allows everyone.
func (a *App) telegramPlatform(ctx context.Context, cfg *config.Loaded, rt *session.Runtime) (*platform, error) {
	token := cfg.Getenv("TELEGRAM_BOT_TOKEN")
	if token == "" {
		return nil, nil
	}
	pair, ignore := a.unknownDMs(cfg, rt)
	lease, err := leaderLease(cfg, rt, "telegram:"+telegramBotID(token))
	if err != nil {
		return nil, err
	}
	tg, err := gateway.NewTelegram(ctx, rt, gateway.TelegramConfig{Pairing: pair, IgnoreUnknownDMs: ignore,
		Token: token, BaseURL: cfg.Getenv("TELEGRAM_BASE_URL"), Auth: gateway.AuthorizationFromEnv("telegram", cfg.Getenv),
		ToolProgress: true, Warn: a.warnFunc(), Lease: lease,
	})
	if err != nil {
		return nil, err
	}
	how := "long polling"
	if lease != nil {
		how = "long polling while this replica holds the database's leader lease"
	}
	fmt.Fprintln(a.Stderr, "hermes: Telegram connected ("+how+")")
	return chatPlatform(ctx, "Telegram", tg), nil
}

// telegramBotID is the bot's id: the token's part before the colon (the
// rest is the secret), or a digest of the token when it has no colon.
func telegramBotID(token string) string {
	if id, _, ok := strings.Cut(token, ":"); ok && id != "" {
		return id
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// leaderLease is the lease named name when sessions live in PostgreSQL
// (replicas share the database: one of them consumes the bot), else nil
// (one process: it consumes the bot at once). database.lease_seconds
// sets its length (default 15 s).
func leaderLease(cfg *config.Loaded, rt *session.Runtime, name string) (gateway.Lease, error) {
	db, ok := rt.Store().(*postgres.DB)
	if !ok {
		return nil, nil
	}
	secs := cfg.Config.Database.LeaseSeconds
	if secs < 0 {
		return nil, fmt.Errorf("database.lease_seconds %d is negative; set a number of seconds (default 15) in config.yaml", secs)
	}
	if secs == 0 {
		secs = 15
	}
	host, _ := os.Hostname()
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, err
	}
	holder := fmt.Sprintf("%s pid %d %s", host, os.Getpid(), hex.EncodeToString(r[:]))
	return db.Lease(name, holder, time.Duration(secs)*time.Second), nil
}
