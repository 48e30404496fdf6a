package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"
)

// maxUpdatesBody bounds a getUpdates answer (100 updates of at most a
// few KiB each in practice).
const maxUpdatesBody = 16 << 20

// errConflict is the Bot API's 409: another getUpdates consumer (or a
// webhook) is active for this bot.
var errConflict = errors.New("409 Conflict")

// runLeased long-polls only while this replica holds the bot's lease,
// with the update offset kept in the lease row: each update's offset is
// advanced in the database (fenced by the lease) before the update is
// handed to the chat core, and getUpdates asks from the stored offset,
// so after a failover the new leader neither repeats an update the old
// one took nor skips one it had not. An update taken by a replica that is
// killed before it answers is the interrupted turn of any kill -9.
func (t *Telegram) runLeased(ctx context.Context) error {
	l := &leader{lease: t.cfg.Lease, what: "telegram: long polling", warn: t.cfg.Warn, now: time.Now}
	poll := t.poll
	if poll == nil {
		poll = &http.Client{Timeout: t.cfg.PollTimeout + 10*time.Second}
	}
	return l.run(ctx, func(lctx context.Context, cursor int64) error {
		return t.pollFrom(ctx, lctx, poll, cursor)
	})
}

// pollFrom long-polls from offset cursor until lctx ends (the lease
// ends) or the token is rejected. Handlers get ctx, the gateway's own:
// a turn in progress outlives the lease.
func (t *Telegram) pollFrom(ctx, lctx context.Context, poll *http.Client, cursor int64) error {
	backoff := time.Duration(0)
	for lctx.Err() == nil {
		if backoff > 0 {
			select {
			case <-lctx.Done():
				return nil
			case <-time.After(backoff):
			}
		}
		updates, err := t.getUpdates(lctx, poll, cursor)
		if err != nil {
			if lctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrRevoked) {
				return errors.New("telegram: the bot token was rejected (TELEGRAM_BOT_TOKEN revoked?): get a new one from @BotFather")
			}
			if errors.Is(err, errConflict) {
				err = fmt.Errorf("%w: another program (or a hermes on another database) polls this bot or set a webhook", err)
			}
			t.cfg.Warn("telegram: getUpdates: " + err.Error())
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			continue
		}
		backoff = 0
		for _, u := range updates {
			if u.ID < cursor {
				continue // confirmed already: Telegram resends until the next offset
			}
			ok, err := t.cfg.Lease.Advance(lctx, u.ID+1)
			if err != nil || !ok {
				// Not taken: the update stays unconfirmed at Telegram for
				// whoever leads next (this replica, if the lease is still ours).
				return errLeaseLost
			}
			cursor = u.ID + 1
			t.onUpdate(ctx, nil, u)
		}
	}
	return nil
}

// getUpdates asks the Bot API for the updates from offset on, waiting up
// to PollTimeout for one. Errors never contain the token (it is in the URL).
func (t *Telegram) getUpdates(ctx context.Context, poll *http.Client, offset int64) ([]*models.Update, error) {
	body, _ := json.Marshal(map[string]any{"offset": offset, "timeout": int(t.cfg.PollTimeout / time.Second),
		"allowed_updates": []string{"message"}})
	base := t.cfg.BaseURL
	if base == "" {
		base = "https://api.telegram.org"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		strings.TrimRight(base, "/")+"/bot"+t.cfg.Token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("TELEGRAM_BASE_URL is not a URL")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := poll.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its URL holds the token
		}
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		OK          bool             `json:"ok"`
		Result      []*models.Update `json:"result"`
		ErrorCode   int              `json:"error_code"`
		Description string           `json:"description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxUpdatesBody)).Decode(&out); err != nil {
		return nil, fmt.Errorf("HTTP %d: reading the answer: %v", resp.StatusCode, err)
	}
	switch {
	case out.OK:
		return out.Result, nil
	case out.ErrorCode == http.StatusUnauthorized:
		return nil, ErrRevoked
	case out.ErrorCode == http.StatusConflict:
		return nil, fmt.Errorf("%w: %s", errConflict, out.Description)
	}
	return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, out.Description)
}
