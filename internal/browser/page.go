package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// consoleCap is how many console messages a browser keeps between two
// browser_console calls (older ones are dropped first).
const consoleCap = 200

// Browser is one session's Chromium with its single tab.
type Browser struct {
	ctx    context.Context // the tab's chromedp context
	cancel func()
	once   sync.Once
	idle   *time.Timer // closes the browser when unused; guarded by Manager.mu

	mu   sync.Mutex // serializes actions; guards refs
	refs *refs

	cmu     sync.Mutex // guards console and dropped (filled while actions run)
	console []ConsoleEntry
	dropped int

	// explain, when set, says why url could not be loaded (the egress
	// gate's refusal of a tunnel, which Chromium does not show).
	explain func(url string) string
}

// ConsoleEntry is one console message or uncaught JS error.
type ConsoleEntry struct {
	Type string `json:"type"` // log, info, warning, error, exception...
	Text string `json:"text"`
	URL  string `json:"url,omitempty"`
	Line int64  `json:"line,omitempty"`
}

func (b *Browser) close() { b.once.Do(b.cancel) }

// collectConsole buffers console messages and exceptions until the tab
// ends. The caller creates msgs (chromedp.Console subscribes when called)
// before any page loads, so no early message is lost.
func (b *Browser) collectConsole(msgs iter.Seq2[chromedp.ConsoleMessage, error]) {
	for m, err := range msgs {
		if err != nil {
			return
		}
		b.log(ConsoleEntry{Type: string(m.Type), Text: m.Text, URL: m.URL, Line: m.Line + 1})
	}
}

// consoleTextMax caps one console message (characters): a page logging
// megabytes per line must not fill the model's context or the session.
const consoleTextMax = 2000

// log appends e to the console buffer, dropping the oldest when full.
func (b *Browser) log(e ConsoleEntry) {
	e.Text = truncate(e.Text, consoleTextMax)
	e.URL = truncate(e.URL, 500)
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if len(b.console) >= consoleCap {
		b.console = b.console[1:]
		b.dropped++
	}
	b.console = append(b.console, e)
}

// handleDialogs answers JavaScript dialogs so they never stall the page:
// alert and beforeunload are accepted, confirm and prompt dismissed (the
// safe answer), and each is logged with the console messages.
func (b *Browser) handleDialogs(evs iter.Seq2[page.EventJavascriptDialogOpening, error]) {
	for ev, err := range evs {
		if err != nil {
			return
		}
		accept := ev.Type == page.DialogTypeAlert || ev.Type == page.DialogTypeBeforeunload
		answer := "dismissed"
		if accept {
			answer = "accepted"
		}
		b.log(ConsoleEntry{Type: "dialog", Text: fmt.Sprintf("%s %q %s", ev.Type, ev.Message, answer), URL: ev.URL})
		_, _ = chromedp.Run(b.ctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, t, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
			return chromedp.Void{}, err
		})
	}
}

// run runs one action under the command timeout.
func run[T any](b *Browser, timeout time.Duration, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil && ctx.Err() != nil && b.ctx.Err() == nil {
		err = fmt.Errorf("%w: the page did not answer in %s", ErrHung, timeout)
	}
	return v, err
}

// ErrHung marks an action that timed out: the browser is dropped.
var ErrHung = errors.New("browser hung")

// Broken reports whether err means the browser is unusable (hung, or its
// process is gone), so the caller drops it and the next call starts a fresh
// one. Broken(nil) checks only the process.
func (b *Browser) Broken(err error) bool {
	return errors.Is(err, ErrHung) || b.ctx.Err() != nil
}

// PageInfo is where the tab is.
type PageInfo struct {
	URL   string `json:"url"`
	Title string `json:"title"`
}

// Navigate loads url and waits for the load event. The refs of the old
// page are forgotten.
func (b *Browser) Navigate(url string, timeout time.Duration) (PageInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refs.reset()
	if _, err := run(b, timeout, chromedp.Navigate(url)); err != nil {
		if why := b.why(url, err); why != "" {
			return PageInfo{}, fmt.Errorf("%v: %s", err, why)
		}
		return PageInfo{}, err
	}
	var refused string
	if _, err := run(b, timeout, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		return chromedp.Void{}, evalJSON(ctx, t, `(document.contentType === 'text/plain' && document.body
			&& (document.body.innerText.startsWith('hermes egress') || document.body.innerText.startsWith('hermes browser refused')) ? document.body.innerText.slice(0, 2000) : '')`, &refused)
	}); err == nil && refused != "" {
		return PageInfo{}, errors.New(strings.TrimSpace(refused))
	}
	return run(b, timeout, info)
}

// why asks explain about a failed load.
func (b *Browser) why(url string, err error) string {
	var le *chromedp.LoadError
	if b.explain == nil || !errors.As(err, &le) {
		return ""
	}
	return b.explain(url)
}

// Back goes one entry back in the tab's history.
func (b *Browser) Back(timeout time.Duration) (PageInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refs.reset()
	// Not chromedp.NavigateBack: a page restored from the back-forward
	// cache fires no load event, so waiting for one would hang.
	_, err := run(b, timeout, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		h, err := cdp.Call(ctx, t, page.GetNavigationHistory, cdp.Empty{})
		if err != nil {
			return chromedp.Void{}, err
		}
		if h.CurrentIndex <= 0 {
			return chromedp.Void{}, errors.New("there is no previous page in this tab's history")
		}
		_, err = cdp.Call(ctx, t, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[h.CurrentIndex-1].ID})
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Void{}, waitSettled(ctx, t, h.Entries[h.CurrentIndex-1].URL)
	})
	if err != nil {
		return PageInfo{}, err
	}
	return run(b, timeout, info)
}

// settle gives an action that may start a navigation (a click, Enter) a
// moment to commit, then waits for the document to finish loading.
func settle(b *Browser, timeout time.Duration) {
	_, _ = run(b, timeout, chromedp.Sleep(150*time.Millisecond))
	_, _ = run(b, timeout, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		return chromedp.Void{}, waitSettled(ctx, t, "")
	})
}

// waitSettled polls until the tab shows url (when set) with its document
// loaded.
func waitSettled(ctx context.Context, t *chromedp.Target, url string) error {
	for {
		var st struct {
			URL   string `json:"url"`
			Ready string `json:"ready"`
		}
		if err := evalJSON(ctx, t, `({url: location.href, ready: document.readyState})`, &st); err == nil &&
			(url == "" || st.URL == url) && st.Ready == "complete" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func info(ctx context.Context, t *chromedp.Target) (PageInfo, error) {
	var p PageInfo
	err := evalJSON(ctx, t, `({url: location.href, title: document.title})`, &p)
	return p, err
}

// evalJSON evaluates expr in the page and decodes its value into v.
func evalJSON(ctx context.Context, t *chromedp.Target, expr string, v any) error {
	res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{
		Expression: "JSON.stringify(" + expr + ")", ReturnByValue: ptr(true), AwaitPromise: ptr(true),
	})
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("page script failed: %s", res.ExceptionDetails.Text)
	}
	var s string
	if err := json.Unmarshal(res.Result.Value, &s); err != nil {
		return err
	}
	return json.Unmarshal([]byte(s), v)
}

func ptr[T any](v T) *T { return &v }

// Snapshot returns the page's accessibility tree as text with @eN refs,
// capped at maxChars (head and tail kept). full lists every node, not only
// the interactive and text-bearing ones.
func (b *Browser) Snapshot(full bool, maxChars int, timeout time.Duration) (PageInfo, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := run(b, timeout, info)
	if err != nil {
		return p, "", err
	}
	text, err := run(b, timeout, func(ctx context.Context, t *chromedp.Target) (string, error) {
		return snapshot(ctx, t, b.refs, full)
	})
	return p, capText(text, maxChars), err
}

// node resolves ref to its DOM node, or explains to the model what to do.
func (b *Browser) node(ref string) (cdp.BackendNodeID, error) {
	id, ok := b.refs.lookup(ref)
	if !ok {
		return 0, fmt.Errorf("unknown element ref %q; take a browser_snapshot and use one of its @e refs", ref)
	}
	return id, nil
}

// Click clicks the element of ref at its centre, as a person would.
func (b *Browser) Click(ref string, timeout time.Duration) (PageInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, err := b.node(ref)
	if err != nil {
		return PageInfo{}, err
	}
	_, err = run(b, timeout, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		x, y, err := centre(ctx, t, id)
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.MouseClickXY(x, y)(ctx, t)
	})
	if err != nil {
		return PageInfo{}, err
	}
	// A click may start a navigation; give it a moment to commit.
	settle(b, timeout)
	return run(b, timeout, info)
}

// centre scrolls the node into view and returns the middle of its first
// box, in viewport coordinates.
func centre(ctx context.Context, t *chromedp.Target, id cdp.BackendNodeID) (float64, float64, error) {
	if _, err := cdp.Call(ctx, t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: id}); err != nil {
		return 0, 0, staleRef(err)
	}
	q, err := cdp.Call(ctx, t, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: id})
	if err != nil {
		return 0, 0, staleRef(err)
	}
	if len(q.Quads) == 0 || len(q.Quads[0]) < 8 {
		return 0, 0, errors.New("the element is not visible, so it cannot be clicked")
	}
	c := q.Quads[0]
	return (c[0] + c[2] + c[4] + c[6]) / 4, (c[1] + c[3] + c[5] + c[7]) / 4, nil
}

func staleRef(err error) error {
	return fmt.Errorf("the element is gone from the page (%v); take a new browser_snapshot", err)
}

// Type focuses the field of ref, clears it and types text.
func (b *Browser) Type(ref, text string, timeout time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, err := b.node(ref)
	if err != nil {
		return err
	}
	_, err = run(b, timeout, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, t, dom.Focus, dom.FocusParams{BackendNodeID: id}); err != nil {
			return chromedp.Void{}, staleRef(err)
		}
		var ok bool
		if err := evalJSON(ctx, t, `(() => { const e = document.activeElement; if (!e) return false;
			if ('value' in e) { e.value = ''; } else if (e.isContentEditable) { e.textContent = ''; } return true; })()`, &ok); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: text})
		return chromedp.Void{}, err
	})
	return err
}

// keyNames maps the key names a model sends to the key the page sees.
var keyNames = map[string]string{
	"enter": kb.Enter, "return": kb.Enter, "tab": kb.Tab, "escape": kb.Escape, "esc": kb.Escape,
	"backspace": kb.Backspace, "delete": kb.Delete, "arrowup": kb.ArrowUp, "arrowdown": kb.ArrowDown,
	"arrowleft": kb.ArrowLeft, "arrowright": kb.ArrowRight, "up": kb.ArrowUp, "down": kb.ArrowDown,
	"left": kb.ArrowLeft, "right": kb.ArrowRight, "home": kb.Home, "end": kb.End,
	"pageup": kb.PageUp, "pagedown": kb.PageDown, "space": " ",
}

// Press sends one key (Enter, Tab, Escape, ArrowDown... or a character) to
// the focused element.
func (b *Browser) Press(key string, timeout time.Duration) (PageInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := keyNames[strings.ToLower(key)]
	if !ok {
		if len([]rune(key)) != 1 {
			return PageInfo{}, fmt.Errorf("unknown key %q; use Enter, Tab, Escape, Backspace, Delete, ArrowUp/Down/Left/Right, Home, End, PageUp, PageDown, Space or one character", key)
		}
		k = key
	}
	if _, err := run(b, timeout, chromedp.KeyEvent(k)); err != nil {
		return PageInfo{}, err
	}
	settle(b, timeout)
	return run(b, timeout, info)
}

// Scroll scrolls the page one screen up or down.
func (b *Browser) Scroll(direction string, timeout time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	sign := ""
	switch strings.ToLower(direction) {
	case "down":
	case "up":
		sign = "-"
	default:
		return fmt.Errorf("direction must be \"up\" or \"down\", not %q", direction)
	}
	_, err := run(b, timeout, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		var ok bool
		return chromedp.Void{}, evalJSON(ctx, t, `(window.scrollBy(0, `+sign+`window.innerHeight * 0.8), true)`, &ok)
	})
	return err
}

// Image is one <img> of the page.
type Image struct {
	Src string `json:"src"`
	Alt string `json:"alt,omitempty"`
}

// Images lists the page's images (at most 100; data: URLs and long
// sources and alt texts shortened).
func (b *Browser) Images(timeout time.Duration) ([]Image, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return run(b, timeout, func(ctx context.Context, t *chromedp.Target) ([]Image, error) {
		var out []Image
		err := evalJSON(ctx, t, `Array.from(document.images).slice(0, 100).filter(i => i.currentSrc || i.src)
			.map(i => { const s = i.currentSrc || i.src; return {src: s.startsWith('data:') && s.length > 100
				? s.slice(0, 60) + '…[' + s.length + ' characters]' : s.slice(0, 2000), alt: (i.alt || '').slice(0, 300)}; })`, &out)
		return out, err
	})
}

// Console returns and clears the buffered console messages, with how many
// older ones were dropped.
func (b *Browser) Console() ([]ConsoleEntry, int) {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	out, dropped := b.console, b.dropped
	b.console, b.dropped = nil, 0
	return out, dropped
}

// Screenshot captures the viewport as PNG.
func (b *Browser) Screenshot(timeout time.Duration) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return run(b, timeout, func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		r, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	})
}
