package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
)

// WriteFileTool is the `write_file` tool (toolset file): it replaces a
// file's whole content, creating parent directories.
type WriteFileTool struct{ opts FileToolOptions }

// NewWriteFileTool returns the write_file tool.
func NewWriteFileTool(opts FileToolOptions) *WriteFileTool { return &WriteFileTool{opts: opts} }

// Toolset is "file".
func (t *WriteFileTool) Toolset() string { return "file" }

// Parallel is false: two writes to one file must not race.
func (t *WriteFileTool) Parallel() bool { return false }

// Spec describes the tool.
func (t *WriteFileTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        "write_file",
		Description: "Write content to a file, replacing it completely; parent directories are created. Use patch to change part of an existing file.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, absolute or relative to the working directory."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"]
}`),
	}
}

type writeFileArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// Run writes the file atomically.
func (t *WriteFileTool) Run(ctx context.Context, call Call) Result {
	var args writeFileArgs
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("%v", err)
	}
	if strings.TrimSpace(args.Path) == "" {
		return Errorf("write_file: path is required")
	}
	if args.Content == nil {
		return Errorf("write_file: content is required (use \"\" for an empty file)")
	}
	env, errRes := openEnv(ctx, t.opts.Backend, call.SessionID, "write_file")
	if errRes != nil {
		return *errRes
	}
	abs := absPath(env, t.opts.Home, args.Path)
	if why := t.opts.writeRefusal(env, abs); why != "" {
		return Errorf("write_file: refused to write %s: %s. Writes there are always blocked; ask the user to make this change", args.Path, why)
	}
	if r := t.opts.protectedWrite(ctx, env, call.SessionID, "write_file", args.Path, abs); r != nil {
		return *r
	}
	verb, old := "Created", ""
	if st, err := env.Stat(ctx, abs); err == nil {
		if st.IsDir {
			return Errorf("write_file: %s is a directory", args.Path)
		}
		verb = "Overwrote"
		if t.opts.Files != nil {
			if data, err := t.opts.readText(ctx, env, call.SessionID, abs); err == nil {
				old = string(data)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Errorf("write_file: %v", err)
	}
	if err := t.opts.writeText(ctx, env, call.SessionID, "write_file", abs, old, []byte(*args.Content)); err != nil {
		return t.opts.writeFailed(env, "write_file", args.Path, abs, err)
	}
	t.opts.acceptProtected(env, abs)
	lines := strings.Count(*args.Content, "\n")
	if *args.Content != "" && !strings.HasSuffix(*args.Content, "\n") {
		lines++
	}
	return Result{Content: fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, abs, len(*args.Content), lines)}
}
