package egress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// AuditRecord is one line of HERMES_HOME/logs/egress.jsonl: one decision
// on one connection (tunnel, SOCKS) or one request (plain HTTP, or a request
// inside an intercepted TLS connection). It never holds a secret value, a
// query string or a header. Text fields are cut to AuditLimits.MaxField
// bytes.
type AuditRecord struct {
	Time       time.Time `json:"time"`
	Box        string    `json:"box"`                  // task id of the box
	Proto      string    `json:"proto"`                // http | connect | https (intercepted) | socks5 | tcp (refused before a protocol)
	Method     string    `json:"method,omitempty"`     // HTTP method; CONNECT for tunnels
	Host       string    `json:"host"`                 // host as requested (lower-case)
	Port       int       `json:"port"`                 //
	Path       string    `json:"path,omitempty"`       // URL path without query
	Decision   string    `json:"decision"`             // allow | deny
	Reason     string    `json:"reason"`               // rule or cause
	Addr       string    `json:"addr,omitempty"`       // the pinned address dialed
	Status     int       `json:"status,omitempty"`     // upstream HTTP status (or the gate's refusal)
	Secrets    []string  `json:"secrets,omitempty"`    // names of secrets substituted
	BytesOut   int64     `json:"bytes_out"`            // box → upstream
	BytesIn    int64     `json:"bytes_in"`             // upstream → box
	Error      string    `json:"error,omitempty"`      // upstream failure
	Suppressed int       `json:"suppressed,omitempty"` // identical records of this box left out before this one
}

// AuditLimits bounds the audit log, which is on the host disk outside any
// box limit.
type AuditLimits struct {
	// MaxField is the longest text field kept, in bytes (default 256); a
	// longer one is cut and ends with "…[+N bytes]".
	MaxField int
	// Burst identical records (same box, decision, destination, path,
	// reason and error) are written per Window (defaults 5 per minute);
	// the rest are counted into the next one written (Suppressed).
	Burst  int
	Window time.Duration
	// MaxFileSize is the size at which egress.jsonl is rotated to
	// egress.jsonl.1 (default 8 MiB); Keep rotated files are kept (default
	// 3), so the log takes at most (Keep+1)×MaxFileSize bytes.
	MaxFileSize int64
	Keep        int
}

func (l AuditLimits) withDefaults() AuditLimits {
	if l.MaxField <= 0 {
		l.MaxField = 256
	}
	if l.Burst <= 0 {
		l.Burst = 5
	}
	if l.Window <= 0 {
		l.Window = time.Minute
	}
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = 8 << 20
	}
	if l.Keep <= 0 {
		l.Keep = 3
	}
	return l
}

// maxRateKeys bounds the rate limiter's memory; past it the counts restart.
const maxRateKeys = 4096

// auditLog appends records to a JSONL file (created 0600, directory 0700),
// truncating fields, rate-limiting identical records and rotating by size.
type auditLog struct {
	path string
	lim  AuditLimits
	now  func() time.Time

	mu   sync.Mutex
	rate map[string]*rateEntry
}

type rateEntry struct {
	start      time.Time
	n          int
	suppressed int
}

func newAuditLog(path string, lim AuditLimits, now func() time.Time) *auditLog {
	if now == nil {
		now = time.Now
	}
	return &auditLog{path: path, lim: lim.withDefaults(), now: now, rate: map[string]*rateEntry{}}
}

// write appends one record; a failure is returned so the caller can report
// it, but it never blocks the traffic.
func (l *auditLog) write(r AuditRecord) error {
	for _, f := range []*string{&r.Box, &r.Proto, &r.Method, &r.Host, &r.Path, &r.Reason, &r.Addr, &r.Error} {
		*f = truncateField(*f, l.lim.MaxField)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.admit(&r) {
		return nil
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return err
	}
	f, err := l.open(int64(len(line)))
	if err != nil {
		return err
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// open opens the log for appending n bytes, rotating it first when they
// would take it past MaxFileSize (the size is read from the open file, so
// several hermes processes appending to one log still rotate it).
func (l *auditLog) open(n int64) (*os.File, error) {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || st.Size()+n <= l.lim.MaxFileSize {
		return f, nil
	}
	f.Close()
	os.Remove(l.path + "." + strconv.Itoa(l.lim.Keep))
	for i := l.lim.Keep - 1; i >= 1; i-- {
		os.Rename(l.path+"."+strconv.Itoa(i), l.path+"."+strconv.Itoa(i+1))
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// admit applies the per-box rate limit of identical records; a record let
// through after suppressed ones carries their count.
func (l *auditLog) admit(r *AuditRecord) bool {
	key := r.Box + "\x00" + r.Decision + "\x00" + r.Proto + "\x00" + r.Method + "\x00" + r.Host + "\x00" +
		strconv.Itoa(r.Port) + "\x00" + r.Path + "\x00" + r.Reason + "\x00" + r.Error
	t := l.now()
	e := l.rate[key]
	if e == nil || t.Sub(e.start) >= l.lim.Window {
		if len(l.rate) >= maxRateKeys {
			clear(l.rate)
		}
		var carried int
		if e != nil {
			carried = e.suppressed
		}
		e = &rateEntry{start: t}
		l.rate[key] = e
		r.Suppressed = carried
	}
	if e.n >= l.lim.Burst {
		e.suppressed++
		return false
	}
	e.n++
	return true
}

// truncateField cuts s to at most max bytes (on a UTF-8 boundary) and says
// how much was cut.
func truncateField(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[+" + strconv.Itoa(len(s)-cut) + " bytes]"
}

// AuditTail is the end of an audit log as ReadAuditTail returns it.
type AuditTail struct {
	Records []AuditRecord // oldest first
	// Oversized counts lines longer than maxAuditLine that were skipped;
	// Unparsed counts lines that are not JSON records.
	Oversized, Unparsed int
}

// maxAuditLine is the longest audit line ReadAuditTail parses.
const maxAuditLine = 64 << 10

// ReadAudit returns the last n records of the audit log at path (oldest
// first); a missing file is no records. Lines that do not parse or are
// too long are skipped (ReadAuditTail counts them).
func ReadAudit(path string, n int) ([]AuditRecord, error) {
	t, err := ReadAuditTail(path, n)
	return t.Records, err
}

// ReadAuditTail reads the last n records of the audit log at path from at
// most its last 4 MiB. It never fails on the content: lines longer than
// 64 KiB and lines that are not records are skipped and counted.
func ReadAuditTail(path string, n int) (AuditTail, error) {
	var t AuditTail
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	defer f.Close()
	const window = 4 << 20
	st, err := f.Stat()
	if err != nil {
		return t, err
	}
	off := max(st.Size()-window, 0)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return t, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	first := off > 0 // a partial line at the window start
	for {
		line, long, err := readLine(br)
		if len(line) > 0 || long {
			switch {
			case first:
			case long:
				t.Oversized++
			default:
				var r AuditRecord
				if json.Unmarshal(bytes.TrimSpace(line), &r) != nil {
					t.Unparsed++
					break
				}
				t.Records = append(t.Records, r)
				if len(t.Records) > n {
					t.Records = t.Records[1:]
				}
			}
			first = false
		}
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return t, fmt.Errorf("%s: %v", path, err)
		}
	}
}

// readLine returns the next line of br without its newline; a line longer
// than maxAuditLine is consumed to its end and reported as long.
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > maxAuditLine+1 {
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), long, err
	}
}
