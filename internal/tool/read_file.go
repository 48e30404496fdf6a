package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/llm"
)

// read_file limits (Hermes "tools-reference.md": 500 lines by default,
// at most 2000 per call, lines cut at 2000 characters).
const (
	defaultReadLimit = 500
	maxReadLimit     = 2000
	maxLineChars     = 2000
)

// ReadFileTool is the `read_file` tool (toolset file).
type ReadFileTool struct{ opts FileToolOptions }

// NewReadFileTool returns the read_file tool.
func NewReadFileTool(opts FileToolOptions) *ReadFileTool {
	if opts.MaxReadChars <= 0 {
		opts.MaxReadChars = DefaultFileReadMaxChars
	}
	if opts.MaxReadFileBytes <= 0 {
		opts.MaxReadFileBytes = DefaultMaxReadFileBytes
	}
	return &ReadFileTool{opts: opts}
}

// Toolset is "file".
func (t *ReadFileTool) Toolset() string { return "file" }

// Parallel is true: reading has no side effects.
func (t *ReadFileTool) Parallel() bool { return true }

// Spec describes the tool.
func (t *ReadFileTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        "read_file",
		Description: "Read a text file and return numbered lines as LINE|CONTENT. Reads 500 lines from offset by default (at most 2000); lines longer than 2000 characters are cut. Use offset to page through long files.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, absolute or relative to the working directory."},
    "offset": {"type": "integer", "description": "First line to read, 1-based (default 1)."},
    "limit": {"type": "integer", "description": "Number of lines to read (default 500, at most 2000)."}
  },
  "required": ["path"]
}`),
	}
}

type readFileArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// Run reads the file.
func (t *ReadFileTool) Run(ctx context.Context, call Call) Result {
	var args readFileArgs
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("%v", err)
	}
	if strings.TrimSpace(args.Path) == "" {
		return Errorf("read_file: path is required, e.g. {\"path\": \"README.md\"}")
	}
	if args.Offset < 0 {
		return Errorf("read_file: offset must be a line number from 1, got %d", args.Offset)
	}
	offset := max(args.Offset, 1)
	limit := args.Limit
	if limit <= 0 {
		limit = defaultReadLimit
	}
	limit = min(limit, maxReadLimit)
	env, errRes := openEnv(ctx, t.opts.Backend, call.SessionID, "read_file")
	if errRes != nil {
		return *errRes
	}
	abs := absPath(env, t.opts.Home, args.Path)
	st, err := env.Stat(ctx, abs)
	if errors.Is(err, fs.ErrNotExist) {
		return notFound(ctx, env, "read_file", args.Path, abs)
	}
	if err != nil {
		return Errorf("read_file: %v", err)
	}
	if st.IsDir {
		return Errorf("read_file: %s is a directory; use search_files with target \"files\" to list it", args.Path)
	}
	if !st.Mode.IsRegular() {
		return Errorf("read_file: %s is not a regular file (%s); read_file reads files only — use the terminal, e.g. head -c 4096 %s | xxd", args.Path, st.Mode.Type(), args.Path)
	}
	if st.Size > t.opts.MaxReadFileBytes {
		return Errorf("read_file: %s is too large to read whole (%d bytes, limit %d). Read part of it with the terminal tool: sed -n 'START,ENDp' %s for a line range, head -n N %s or tail -n N %s for its ends, or search it with search_files",
			args.Path, st.Size, t.opts.MaxReadFileBytes, args.Path, args.Path, args.Path)
	}
	data, err := t.opts.readText(ctx, env, call.SessionID, abs)
	if err != nil {
		return Errorf("read_file: %v", err)
	}
	text, ok := decodeText(data)
	if !ok {
		return Errorf("read_file: %s looks like a binary file (%d bytes); read_file shows text only — inspect it with the terminal (file, xxd, strings)", args.Path, len(data))
	}
	if text == "" {
		return Result{Content: fmt.Sprintf("(%s is empty)", args.Path)}
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	if offset > total {
		return Errorf("read_file: offset %d is past the end of %s (%d lines)", offset, args.Path, total)
	}
	var b strings.Builder
	last := offset - 1
	for i := offset - 1; i < total && i < offset-1+limit; i++ {
		line := strings.TrimRight(lines[i], "\r\n")
		if n := utf8.RuneCountInString(line); n > maxLineChars {
			line = line[:byteOffset(line, maxLineChars)] + fmt.Sprintf("... [line cut: %d more characters]", n-maxLineChars)
		}
		entry := fmt.Sprintf("%6d|%s\n", i+1, line)
		if b.Len()+len(entry) > t.opts.MaxReadChars && i > offset-1 {
			break
		}
		b.WriteString(entry)
		last = i + 1
	}
	if last < total {
		fmt.Fprintf(&b, "\n[Showing lines %d-%d of %d. Use offset=%d to read more.]", offset, last, total, last+1)
	}
	return Result{Content: b.String()}
}

// decodeText returns data as UTF-8 text: UTF-16 with a byte-order mark is
// transcoded, a UTF-8 BOM dropped, invalid bytes shown as U+FFFD. ok is
// false for binary data.
func decodeText(data []byte) (string, bool) {
	switch {
	case len(data) >= 2 && (data[0] == 0xFF && data[1] == 0xFE || data[0] == 0xFE && data[1] == 0xFF):
		little := data[0] == 0xFF
		u := make([]uint16, 0, len(data)/2)
		for i := 2; i+1 < len(data); i += 2 {
			if little {
				u = append(u, uint16(data[i])|uint16(data[i+1])<<8)
			} else {
				u = append(u, uint16(data[i])<<8|uint16(data[i+1]))
			}
		}
		return string(utf16.Decode(u)), true
	case len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF:
		data = data[3:]
	}
	if looksBinary(data) {
		return "", false
	}
	return strings.ToValidUTF8(string(data), "\uFFFD"), true
}
