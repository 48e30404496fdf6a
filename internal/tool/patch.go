package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/hermes-go/hermes/internal/llm"
)

// maxPreviewLines bounds the diff preview in a patch result.
const maxPreviewLines = 40

// PatchTool is the `patch` tool (toolset file) in Hermes' replace mode:
// old_string is found exactly and replaced by new_string.
type PatchTool struct{ opts FileToolOptions }

// NewPatchTool returns the patch tool.
func NewPatchTool(opts FileToolOptions) *PatchTool { return &PatchTool{opts: opts} }

// Toolset is "file".
func (t *PatchTool) Toolset() string { return "file" }

// Parallel is false: edits to one file must not race.
func (t *PatchTool) Parallel() bool { return false }

// Spec describes the tool.
func (t *PatchTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "patch",
		Description: "Edit a file by replacing old_string with new_string. old_string must match the file exactly (whitespace, indentation and line endings) " +
			"and only once, unless replace_all is true; include surrounding lines to make it unique. Returns a diff preview.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File to edit."},
    "old_string": {"type": "string", "description": "Exact text to find."},
    "new_string": {"type": "string", "description": "Replacement text."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
  },
  "required": ["path", "old_string", "new_string"]
}`),
	}
}

type patchArgs struct {
	Path       string  `json:"path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

// Run applies the edit atomically.
func (t *PatchTool) Run(ctx context.Context, call Call) Result {
	var args patchArgs
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("%v", err)
	}
	switch {
	case strings.TrimSpace(args.Path) == "":
		return Errorf("patch: path is required")
	case args.OldString == nil || *args.OldString == "":
		return Errorf("patch: old_string is required and must not be empty; to create a file use write_file")
	case args.NewString == nil:
		return Errorf("patch: new_string is required (use \"\" to delete old_string)")
	case *args.OldString == *args.NewString:
		return Errorf("patch: old_string and new_string are identical; nothing to change")
	}
	oldS, newS := *args.OldString, *args.NewString
	env, errRes := openEnv(ctx, t.opts.Backend, call.SessionID, "patch")
	if errRes != nil {
		return *errRes
	}
	abs := absPath(env, t.opts.Home, args.Path)
	if why := t.opts.writeRefusal(env, abs); why != "" {
		return Errorf("patch: refused to edit %s: %s. Writes there are always blocked; ask the user to make this change", args.Path, why)
	}
	if r := t.opts.protectedWrite(ctx, env, call.SessionID, "patch", args.Path, abs); r != nil {
		return *r
	}
	data, err := t.opts.readText(ctx, env, call.SessionID, abs)
	if errors.Is(err, fs.ErrNotExist) {
		return notFound(ctx, env, "patch", args.Path, abs)
	}
	if err != nil {
		return Errorf("patch: %v", err)
	}
	content := string(data)
	if looksBinary(data) {
		return Errorf("patch: %s looks like a binary file; patch edits text only", args.Path)
	}
	count := strings.Count(content, oldS)
	var note string
	// A model often sends "\n" for a file with "\r\n" line endings; match
	// with the file's endings so every byte it keeps stays as it was.
	if count == 0 && strings.Contains(content, "\r\n") && strings.Contains(oldS, "\n") && !strings.Contains(oldS, "\r\n") {
		crlfOld := strings.ReplaceAll(oldS, "\n", "\r\n")
		if c := strings.Count(content, crlfOld); c > 0 {
			oldS, newS, count = crlfOld, strings.ReplaceAll(strings.ReplaceAll(newS, "\r\n", "\n"), "\n", "\r\n"), c
			note = " (matched with the file's CRLF line endings)"
		}
	}
	if count == 0 {
		return Errorf("patch: old_string not found in %s.%s", args.Path, closestHint(content, oldS))
	}
	if count > 1 && !args.ReplaceAll {
		return Errorf("patch: old_string occurs %d times in %s (at lines %s); add surrounding lines to make it unique, or set replace_all: true",
			count, args.Path, joinInts(matchLines(content, oldS, 10)))
	}
	updated := strings.ReplaceAll(content, oldS, newS)
	if !args.ReplaceAll {
		updated = strings.Replace(content, oldS, newS, 1)
		count = 1
	}
	if err := t.opts.writeText(ctx, env, call.SessionID, "patch", abs, content, []byte(updated)); err != nil {
		return t.opts.writeFailed(env, "patch", args.Path, abs, err)
	}
	t.opts.acceptProtected(env, abs)
	var b strings.Builder
	fmt.Fprintf(&b, "Patched %s: %d replacement(s)%s\n", abs, count, note)
	b.WriteString(diffPreview(args.Path, content, oldS, newS, count))
	return Result{Content: b.String()}
}

// matchLines returns the 1-based line numbers where the first n matches of
// sub start.
func matchLines(s, sub string, n int) []int {
	var out []int
	pos := 0
	for len(out) < n {
		i := strings.Index(s[pos:], sub)
		if i < 0 {
			break
		}
		out = append(out, strings.Count(s[:pos+i], "\n")+1)
		pos += i + max(1, len(sub))
	}
	return out
}

func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}

// closestHint points at the file line most like old_string's first
// non-blank line, and names a whitespace or line-ending mismatch.
func closestHint(content, old string) string {
	var hint strings.Builder
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if strings.Contains(squash(content), squash(old)) {
		hint.WriteString(" The text exists with different whitespace or indentation; copy it exactly from read_file output (without the LINE| prefix).")
	}
	want := ""
	for _, l := range strings.Split(old, "\n") {
		if strings.TrimSpace(l) != "" {
			want = strings.TrimSpace(l)
			break
		}
	}
	if want == "" {
		return hint.String()
	}
	lines := strings.Split(content, "\n")
	best, bestScore := -1, -1.0
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if len(t) > 4*len(want)+50 || len(want) > 4*len(t)+50 {
			continue
		}
		d := levenshtein.ComputeDistance(want, t)
		score := 1 - float64(d)/float64(max(len(want), len(t)))
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best >= 0 && bestScore >= 0.5 {
		fmt.Fprintf(&hint, " Closest line:\n%6d|%s", best+1, strings.TrimRight(lines[best], "\r"))
	} else {
		hint.WriteString(" Read the file again to see its current content.")
	}
	return hint.String()
}

// maxPreviewHunks is how many replacements a patch result shows.
const maxPreviewHunks = 3

// diffPreview shows the first replacements of oldS by newS in content as a
// unified line diff: whole lines, changed ones as -/+ and unchanged lines
// of the touched block as context, with old and new line numbers.
func diffPreview(path, content, oldS, newS string, count int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", path, path)
	delta := strings.Count(newS, "\n") - strings.Count(oldS, "\n")
	shown, hunks := 0, 0
	for off, from := 0, 0; hunks < min(count, maxPreviewHunks); hunks++ {
		k := strings.Index(content[from:], oldS)
		if k < 0 {
			break
		}
		off = from + k
		from = off + len(oldS)
		start := strings.LastIndexByte(content[:off], '\n') + 1
		end, newBlock := from, content[start:off]+newS
		if end > start && content[end-1] == '\n' {
			// The match ends with its line: so does the block.
			end--
			newBlock = strings.TrimSuffix(newBlock, "\n")
		} else {
			if e := strings.IndexByte(content[end:], '\n'); e >= 0 {
				end += e
			} else {
				end = len(content)
			}
			newBlock += content[from:end]
		}
		oldLines := strings.Split(content[start:end], "\n")
		newLines := strings.Split(newBlock, "\n")
		if newBlock == "" {
			newLines = nil
		}
		oldAt := strings.Count(content[:start], "\n") + 1
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", oldAt, len(oldLines), oldAt+hunks*delta, len(newLines))
		pre := 0
		for pre < len(oldLines) && pre < len(newLines) && oldLines[pre] == newLines[pre] {
			pre++
		}
		post := 0
		for post < len(oldLines)-pre && post < len(newLines)-pre &&
			oldLines[len(oldLines)-1-post] == newLines[len(newLines)-1-post] {
			post++
		}
		write := func(mark string, lines []string) {
			for _, l := range lines {
				if shown++; shown <= maxPreviewLines {
					b.WriteString(mark + strings.TrimRight(l, "\r") + "\n")
				}
			}
		}
		write(" ", oldLines[:pre])
		write("-", oldLines[pre:len(oldLines)-post])
		write("+", newLines[pre:len(newLines)-post])
		write(" ", oldLines[len(oldLines)-post:])
		if shown > maxPreviewLines {
			b.WriteString("... (preview cut)\n")
			break
		}
	}
	if count > hunks {
		fmt.Fprintf(&b, "... and %d more replacement(s)\n", count-hunks)
	}
	return b.String()
}
