package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/gateway"
	"github.com/hermes-go/hermes/internal/pairing"
	"github.com/hermes-go/hermes/internal/session"
)

// runner is a chat platform adapter: it runs until its context ends or it
// fails for good (a revoked token).
type runner interface {
	Run(ctx context.Context) error
	Chat() *gateway.Chat
}

// chatPlatform runs r as a gateway platform: stop cancels it and waits
// (bounded by the drain context) for its replies in flight.
func chatPlatform(ctx context.Context, name string, r runner) *platform {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	return &platform{
		name: name,
		chat: r.Chat(),
		serve: func() error {
			defer close(done)
			return r.Run(runCtx)
		},
		stop: func(dctx context.Context) error {
			cancel()
			select {
			case <-done:
				return nil
			case <-dctx.Done():
				return dctx.Err()
			}
		},
	}
}

// chatPlatforms builds the chat platforms the environment configures. One
// that fails to start is reported and left out: the others run.
func (a *App) chatPlatforms(ctx context.Context, cfg *config.Loaded, rt *session.Runtime) (out []platform, failed int) {
	for _, build := range []func(context.Context, *config.Loaded, *session.Runtime) (*platform, error){
		a.telegramPlatform, a.discordPlatform, a.slackPlatform,
	} {
		p, err := build(ctx, cfg, rt)
		if err != nil {
			fmt.Fprintf(a.Stderr, "hermes: %v (this platform is not started)\n", err)
			failed++
			continue
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, failed
}

// unknownDMs reads unauthorized_dm_behavior: pair (default) hands out
// pairing codes, ignore stays silent. The pairing state is rt's database's
// with database.backend postgres (every replica shares it).
func (a *App) unknownDMs(cfg *config.Loaded, rt *session.Runtime) (gateway.Pairer, bool) {
	if cfg.Config.UnauthorizedDMBehavior == "ignore" {
		return nil, true
	}
	return pairing.NewWith(database.PairingDocs(rt.Store(), a.Home()), a.Now), false
}

func (a *App) warnFunc() func(string) {
	return func(msg string) { fmt.Fprintln(a.Stderr, "hermes:", msg) }
}

// requireMention reads <PLATFORM>_REQUIRE_MENTION (default true): in
// group channels the bot answers only when mentioned or in a thread.
func requireMention(cfg *config.Loaded, name string) bool {
	v := cfg.Getenv(name)
	return v == "" || truthy(v)
}

// discordPlatform builds the Discord platform when DISCORD_BOT_TOKEN is
// set (DISCORD_ALLOWED_USERS; DISCORD_BASE_URL replaces discord.com).
func (a *App) discordPlatform(ctx context.Context, cfg *config.Loaded, rt *session.Runtime) (*platform, error) {
	token := cfg.Getenv("DISCORD_BOT_TOKEN")
	if token == "" {
		return nil, nil
	}
	pair, ignore := a.unknownDMs(cfg, rt)
	sum := sha256.Sum256([]byte(token))
	lease, err := leaderLease(cfg, rt, "discord:"+hex.EncodeToString(sum[:8]))
	if err != nil {
		return nil, err
	}
	dc, err := gateway.NewDiscord(ctx, rt, gateway.DiscordConfig{Pairing: pair, IgnoreUnknownDMs: ignore,
		Token: token, BaseURL: cfg.Getenv("DISCORD_BASE_URL"), Auth: gateway.AuthorizationFromEnv("discord", cfg.Getenv),
		RequireMention: requireMention(cfg, "DISCORD_REQUIRE_MENTION"), ToolProgress: true, Warn: a.warnFunc(),
		Lease: lease,
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(a.Stderr, "hermes: Discord connected")
	return chatPlatform(ctx, "Discord", dc), nil
}

// slackPlatform builds the Slack platform when SLACK_BOT_TOKEN is set
// (Socket Mode with SLACK_APP_TOKEN; SLACK_ALLOWED_USERS; SLACK_API_URL
// replaces https://slack.com/api/).
func (a *App) slackPlatform(ctx context.Context, cfg *config.Loaded, rt *session.Runtime) (*platform, error) {
	token := cfg.Getenv("SLACK_BOT_TOKEN")
	if token == "" {
		return nil, nil
	}
	pair, ignore := a.unknownDMs(cfg, rt)
	sl, err := gateway.NewSlack(ctx, rt, gateway.SlackConfig{Pairing: pair, IgnoreUnknownDMs: ignore,
		BotToken: token, AppToken: cfg.Getenv("SLACK_APP_TOKEN"), APIURL: cfg.Getenv("SLACK_API_URL"),
		Auth:           gateway.AuthorizationFromEnv("slack", cfg.Getenv),
		RequireMention: requireMention(cfg, "SLACK_REQUIRE_MENTION"), ToolProgress: true, Warn: a.warnFunc(),
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(a.Stderr, "hermes: Slack connected (Socket Mode)")
	return chatPlatform(ctx, "Slack", sl), nil
}
