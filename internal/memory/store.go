// Package memory is Hermes' built-in persistent memory ("memory.md" of the
// Hermes docs, tools/memory_tool.py): two bounded files of curated entries in
// HERMES_HOME/memories/, MEMORY.md (the agent's notes) and USER.md (the user
// profile), entries separated by a line holding only "§". Limits are in
// characters (Unicode code points) of the whole file as written, entries
// joined by "\n§\n".
//
// Every change is a read-modify-write under an exclusive flock(2) on a lock
// file beside the target (MEMORY.md.lock, as Hermes), so concurrent processes
// lose no entry, and the file is replaced atomically (temp file in the same
// directory, fsync, rename). When an add would pass the limit, the oldest
// entries are moved to ARCHIVE.jsonl first.
package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"
)

// Target selects one of the two memory files.
type Target string

// The two targets of the memory tool.
const (
	TargetMemory Target = "memory" // MEMORY.md, the agent's personal notes
	TargetUser   Target = "user"   // USER.md, who the user is
)

// Default limits (config memory.memory_char_limit and memory.user_char_limit).
const (
	DefaultMemoryCharLimit = 2200
	DefaultUserCharLimit   = 1375
)

// EntryDelimiter is written between entries, as Hermes writes it.
const EntryDelimiter = "\n§\n"

// ArchiveFile is the name of the eviction archive in the memories directory.
const ArchiveFile = "ARCHIVE.jsonl"

// ParseTarget validates a target name from the model or the command line.
func ParseTarget(s string) (Target, error) {
	switch t := Target(strings.TrimSpace(s)); t {
	case TargetMemory, TargetUser:
		return t, nil
	case "":
		return TargetMemory, nil
	}
	return "", &Refusal{Reason: fmt.Sprintf("invalid target %q: use \"memory\" or \"user\"", s)}
}

// FileName is the file of t inside the memories directory.
func (t Target) FileName() string {
	if t == TargetUser {
		return "USER.md"
	}
	return "MEMORY.md"
}

// Store reads and changes the memory files of one HERMES_HOME. It holds no
// entries in memory: every call re-reads the disk, so several Stores (or
// processes) on the same directory see each other's writes. A Store is safe
// for concurrent use.
type Store struct {
	dir       string
	memLimit  int
	userLimit int
	now       func() time.Time
}

// NewStore returns a store on dir (HERMES_HOME/memories, created on the first
// write). memLimit and userLimit are the character limits of MEMORY.md and
// USER.md; zero or negative means the default (2200, 1375). now stamps
// archive lines; nil means time.Now.
func NewStore(dir string, memLimit, userLimit int, now func() time.Time) *Store {
	if memLimit <= 0 {
		memLimit = DefaultMemoryCharLimit
	}
	if userLimit <= 0 {
		userLimit = DefaultUserCharLimit
	}
	if now == nil {
		now = time.Now
	}
	return &Store{dir: dir, memLimit: memLimit, userLimit: userLimit, now: now}
}

// Dir is the memories directory.
func (s *Store) Dir() string { return s.dir }

// Limit is the character limit of t.
func (s *Store) Limit(t Target) int {
	if t == TargetUser {
		return s.userLimit
	}
	return s.memLimit
}

// Path is the file of t.
func (s *Store) Path(t Target) string { return filepath.Join(s.dir, t.FileName()) }

// Refusal is an error caused by the request rather than by the disk: empty
// or blocked content, an old_text that matches no entry or several, an entry
// larger than the whole limit. Nothing was changed. The memory tool shows it
// to the model as an error result.
type Refusal struct {
	Reason string
	// Candidates are previews (≤80 chars) of the entries an ambiguous
	// old_text matched.
	Candidates []string
	// Entries are the current entries (previews), given when old_text
	// matched nothing or a replace would not fit, so the caller can choose.
	Entries []string
}

func (r *Refusal) Error() string {
	var b strings.Builder
	b.WriteString(r.Reason)
	if len(r.Candidates) > 0 {
		b.WriteString(" Candidates:")
		for _, c := range r.Candidates {
			b.WriteString("\n- " + c)
		}
	}
	return b.String()
}

// State is the live content of one target.
type State struct {
	Target  Target
	Entries []string
	// Chars is the character count of the file content (entries joined by
	// EntryDelimiter); Limit the configured limit.
	Chars, Limit int
}

// Percent is the fill level, floored and capped at 100 (Hermes:
// min(100, int(current/limit*100))).
func (st State) Percent() int {
	if st.Limit <= 0 {
		return 0
	}
	return min(100, st.Chars*100/st.Limit)
}

// Usage renders the fill level as Hermes does: "67% — 1,474/2,200 chars".
func (st State) Usage() string {
	return fmt.Sprintf("%d%% — %s/%s chars", st.Percent(), groupThousands(st.Chars), groupThousands(st.Limit))
}

// Outcome is the result of a successful change.
type Outcome struct {
	// Message says what happened: "Entry added.", "Entry replaced.",
	// "Entry removed." or "Entry already exists (no duplicate added)."
	Message string
	// Changed is false when nothing was written (an exact duplicate).
	Changed bool
	// Evicted are the entries moved to ARCHIVE.jsonl to make room, oldest
	// first.
	Evicted []string
	// State is the live state after the change.
	State State
}

// ArchiveRecord is one line of ARCHIVE.jsonl.
type ArchiveRecord struct {
	Target     Target    `json:"target"`
	Content    string    `json:"content"`
	ArchivedAt time.Time `json:"archived_at"`
	Reason     string    `json:"reason"`
}

// State reads the live entries of t.
func (s *Store) State(t Target) (State, error) {
	entries, err := s.read(t)
	if err != nil {
		return State{}, err
	}
	return s.state(t, entries), nil
}

func (s *Store) state(t Target, entries []string) State {
	return State{Target: t, Entries: entries, Chars: charCount(entries), Limit: s.Limit(t)}
}

// Add appends content as a new entry of t. Content is trimmed; empty
// content, content with a line holding only "§", content flagged by
// ScanThreats, and content longer than the whole limit are refused
// (*Refusal). An exact duplicate of an existing entry is not added (Changed
// false). If the new entry does not fit, the oldest entries are appended to
// ARCHIVE.jsonl and removed until it does; they are listed in Evicted.
func (s *Store) Add(t Target, content string) (Outcome, error) {
	content, err := s.validContent(t, content)
	if err != nil {
		return Outcome{}, err
	}
	var out Outcome
	err = s.locked(t, func(entries []string) ([]string, error) {
		for _, e := range entries {
			if e == content {
				out = Outcome{Message: "Entry already exists (no duplicate added).", State: s.state(t, entries)}
				return nil, nil
			}
		}
		next := append(entries, content)
		var evicted []string
		for charCount(next) > s.Limit(t) {
			evicted = append(evicted, next[0])
			next = next[1:]
		}
		if len(evicted) > 0 {
			if err := s.archive(t, evicted, "evicted: store full"); err != nil {
				return nil, err
			}
		}
		out = Outcome{Message: "Entry added.", Changed: true, Evicted: evicted, State: s.state(t, next)}
		return next, nil
	})
	return out, err
}

// Replace overwrites the one entry of t containing oldText with content.
// oldText matching no entry, or several, is a *Refusal listing the entries
// or the candidates; so is a result that would pass the limit (replace never
// evicts). Content is validated as for Add.
func (s *Store) Replace(t Target, oldText, content string) (Outcome, error) {
	content, err := s.validContent(t, content)
	if err != nil {
		return Outcome{}, err
	}
	var out Outcome
	err = s.locked(t, func(entries []string) ([]string, error) {
		i, err := locate(entries, oldText)
		if err != nil {
			return nil, err
		}
		next := append([]string(nil), entries...)
		next[i] = content
		if n := charCount(next); n > s.Limit(t) {
			return nil, &Refusal{
				Reason: fmt.Sprintf("Replacement would put %s at %s/%s chars. Shorten the new content or remove stale entries first.",
					t.FileName(), groupThousands(n), groupThousands(s.Limit(t))),
				Entries: previews(entries),
			}
		}
		if dup := indexOf(next, content); dup != i {
			next = append(next[:i], next[i+1:]...) // content already present: merge
		}
		out = Outcome{Message: "Entry replaced.", Changed: true, State: s.state(t, next)}
		return next, nil
	})
	return out, err
}

// Remove deletes the one entry of t containing oldText; no match or several
// matches are a *Refusal.
func (s *Store) Remove(t Target, oldText string) (Outcome, error) {
	var out Outcome
	err := s.locked(t, func(entries []string) ([]string, error) {
		i, err := locate(entries, oldText)
		if err != nil {
			return nil, err
		}
		// Non-nil even when the last entry goes: nil means "nothing to write".
		next := append(append(make([]string, 0, len(entries)), entries[:i]...), entries[i+1:]...)
		out = Outcome{Message: "Entry removed.", Changed: true, State: s.state(t, next)}
		return next, nil
	})
	return out, err
}

func (s *Store) validContent(t Target, content string) (string, error) {
	content = strings.TrimSpace(strings.ReplaceAll(content, "\r\n", "\n"))
	if content == "" {
		return "", &Refusal{Reason: "Content cannot be empty: give the text of the entry in content."}
	}
	for line := range strings.SplitSeq(content, "\n") {
		if strings.TrimSpace(line) == "§" {
			return "", &Refusal{Reason: "Content cannot contain a line holding only \"§\": it separates entries."}
		}
	}
	if reason := threatReason(content); reason != "" {
		return "", &Refusal{Reason: reason}
	}
	if n := utf8.RuneCountInString(content); n > s.Limit(t) {
		return "", &Refusal{Reason: fmt.Sprintf("Entry is %s chars, longer than the whole %s limit of %s chars. Shorten it.",
			groupThousands(n), t.FileName(), groupThousands(s.Limit(t)))}
	}
	return content, nil
}

// locate finds the entry containing oldText.
func locate(entries []string, oldText string) (int, error) {
	oldText = strings.TrimSpace(oldText)
	if oldText == "" {
		return 0, &Refusal{Reason: "old_text cannot be empty: give a short unique substring of the entry.", Entries: previews(entries)}
	}
	var hits []int
	for i, e := range entries {
		if strings.Contains(e, oldText) {
			hits = append(hits, i)
		}
	}
	switch len(hits) {
	case 0:
		return 0, &Refusal{Reason: fmt.Sprintf("No entry matched %q. Retry with text from one of the current entries.", oldText), Entries: previews(entries)}
	case 1:
		return hits[0], nil
	}
	cands := make([]string, len(hits))
	for j, i := range hits {
		cands[j] = preview(entries[i])
	}
	return 0, &Refusal{Reason: fmt.Sprintf("%d entries matched %q. Be more specific.", len(hits), oldText), Candidates: cands}
}

// locked runs change on the entries of t under the target's flock and
// writes what it returns; a nil slice with a nil error writes nothing.
func (s *Store) locked(t Target, change func([]string) ([]string, error)) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("creating memory directory: %w", err)
	}
	lockPath := s.Path(t) + ".lock"
	lock, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening lock file: %w", err)
	}
	defer lock.Close()
	for {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("locking %s: %w", lockPath, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)

	entries, err := s.read(t)
	if err != nil {
		return err
	}
	next, err := change(entries)
	if err != nil || next == nil {
		return err
	}
	data := strings.Join(next, EntryDelimiter)
	if err := renameio.WriteFile(s.Path(t), []byte(data), 0o600, renameio.WithTempDir(s.dir)); err != nil {
		return fmt.Errorf("writing %s: %w", s.Path(t), err)
	}
	return nil
}

// archive appends records for entries to ARCHIVE.jsonl in one write and
// fsyncs it, so a crash after it loses nothing.
func (s *Store) archive(t Target, entries []string, reason string) error {
	var buf []byte
	at := s.now().UTC()
	for _, e := range entries {
		line, err := json.Marshal(ArchiveRecord{Target: t, Content: e, ArchivedAt: at, Reason: reason})
		if err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
	}
	path := filepath.Join(s.dir, ArchiveFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening memory archive: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	return f.Close()
}

// Archive reads ARCHIVE.jsonl; lines that are not valid JSON are skipped.
func (s *Store) Archive() ([]ArchiveRecord, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, ArchiveFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ArchiveRecord
	for line := range strings.SplitSeq(string(b), "\n") {
		var r ArchiveRecord
		if strings.TrimSpace(line) != "" && json.Unmarshal([]byte(line), &r) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// read loads the entries of t: a missing file is empty.
func (s *Store) read(t Target) ([]string, error) {
	b, err := os.ReadFile(s.Path(t))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.Path(t), err)
	}
	return ParseEntries(string(b)), nil
}

// ParseEntries splits a memory file into entries. It is lenient: CRLF line
// ends, a UTF-8 BOM, blank lines and spaces around the "§" separator line
// are accepted; a "§" inside a line of text is content. Entries are trimmed,
// empty ones dropped and exact duplicates dropped (first kept), as Hermes
// does on load.
func ParseEntries(raw string) []string {
	raw = strings.TrimPrefix(raw, "\ufeff")
	raw = strings.ReplaceAll(raw, "\r\n", "\n")
	var out []string
	seen := map[string]bool{}
	var cur []string
	flush := func() {
		e := strings.TrimSpace(strings.Join(cur, "\n"))
		cur = cur[:0]
		if e != "" && !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	for line := range strings.SplitSeq(raw, "\n") {
		if strings.TrimSpace(line) == "§" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

func charCount(entries []string) int {
	if len(entries) == 0 {
		return 0
	}
	return utf8.RuneCountInString(strings.Join(entries, EntryDelimiter))
}

func indexOf(entries []string, s string) int {
	for i, e := range entries {
		if e == s {
			return i
		}
	}
	return -1
}

func preview(e string) string {
	if r := []rune(e); len(r) > 80 {
		return string(r[:80]) + "..."
	}
	return e
}

func previews(entries []string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = preview(e)
	}
	return out
}

// groupThousands renders n with comma separators: 2200 → "2,200".
func groupThousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
