package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/llm"
)

// search_files limits.
const (
	defaultSearchLimit = 50
	maxSearchFileSize  = 10 << 20 // larger files are skipped
	maxSearchEntries   = 200_000  // entries visited before giving up
	maxMatchLineChars  = 500
)

// skippedDirs are never searched: version control metadata and dependency trees.
var skippedDirs = map[string]bool{".git": true, "node_modules": true, ".hg": true, ".svn": true, "__pycache__": true, ".venv": true}

// SearchFilesTool is the `search_files` tool (toolset file): a regex search
// of file contents, or a glob search of file names, in pure Go through the
// environment's ReadDir/ReadFile (no ripgrep).
type SearchFilesTool struct{ opts FileToolOptions }

// NewSearchFilesTool returns the search_files tool.
func NewSearchFilesTool(opts FileToolOptions) *SearchFilesTool { return &SearchFilesTool{opts: opts} }

// Toolset is "file".
func (t *SearchFilesTool) Toolset() string { return "file" }

// Parallel is true: searching has no side effects.
func (t *SearchFilesTool) Parallel() bool { return true }

// Spec describes the tool.
func (t *SearchFilesTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "search_files",
		Description: "Search files. target \"content\" (default): pattern is a regular expression (RE2 syntax) matched against each line; results are path:line: text. " +
			"target \"files\": pattern is a glob matched against file names (or paths when it contains /, ** allowed). Skips .git, node_modules and binary files.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Regex for content, glob for files."},
    "target": {"type": "string", "enum": ["content", "files"], "description": "What to search (default content)."},
    "path": {"type": "string", "description": "Directory or file to search (default the working directory)."},
    "file_glob": {"type": "string", "description": "Only search files whose name matches this glob, e.g. *.go."},
    "limit": {"type": "integer", "description": "Maximum results (default 50)."}
  },
  "required": ["pattern"]
}`),
	}
}

type searchArgs struct {
	Pattern  string `json:"pattern"`
	Target   string `json:"target"`
	Path     string `json:"path"`
	FileGlob string `json:"file_glob"`
	Limit    int    `json:"limit"`
}

// Run searches.
func (t *SearchFilesTool) Run(ctx context.Context, call Call) Result {
	var args searchArgs
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("%v", err)
	}
	if args.Pattern == "" {
		return Errorf("search_files: pattern is required: a regex for target content, a glob such as *.go for target files")
	}
	target := strings.ToLower(strings.TrimSpace(args.Target))
	switch target {
	case "", "content", "grep":
		target = "content"
	case "files", "file", "find":
		target = "files"
	default:
		return Errorf("search_files: target must be \"content\" or \"files\", got %q", args.Target)
	}
	limit := args.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	if args.FileGlob != "" {
		if _, err := path.Match(args.FileGlob, "x"); err != nil {
			return Errorf("search_files: file_glob %q is not a valid glob: %v", args.FileGlob, err)
		}
	}
	var re *regexp.Regexp
	if target == "content" {
		var err error
		if re, err = regexp.Compile(args.Pattern); err != nil {
			return Errorf("search_files: pattern is not a valid regular expression (RE2 syntax): %v; escape special characters such as ( [ . with \\", err)
		}
	} else if !doublestar.ValidatePattern(args.Pattern) {
		return Errorf("search_files: pattern %q is not a valid glob", args.Pattern)
	}
	env, errRes := openEnv(ctx, t.opts.Backend, call.SessionID, "search_files")
	if errRes != nil {
		return *errRes
	}
	root := args.Path
	if root == "" {
		root = "."
	}
	abs := absPath(env, t.opts.Home, root)
	st, err := env.Stat(ctx, abs)
	if err != nil {
		return Errorf("search_files: path %s: %v", root, err)
	}
	s := &search{ctx: ctx, env: env, re: re, glob: args.Pattern, fileGlob: args.FileGlob, limit: limit, root: abs, display: root}
	if st.IsDir {
		s.walk(abs)
	} else {
		s.file(abs, st)
	}
	if ctx.Err() != nil {
		return Errorf("search_files: cancelled")
	}
	return Result{Content: s.report(target)}
}

// search is one search_files run.
type search struct {
	ctx      context.Context
	env      backend.Environment
	re       *regexp.Regexp // nil for target files
	glob     string
	fileGlob string
	limit    int
	root     string // absolute
	display  string // root as the model wrote it

	results   []string
	more      bool // the limit was reached
	visited   int
	truncated bool // maxSearchEntries reached
	skipped   int  // files skipped as binary or too large
}

func (s *search) full() bool { return s.more || s.truncated || s.ctx.Err() != nil }

// show renders an absolute path relative to the root as the model named it.
func (s *search) show(abs string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(abs, s.root), "/")
	if rel == "" {
		return s.display
	}
	if s.display == "." {
		return rel
	}
	return path.Join(s.display, rel)
}

func (s *search) add(line string) {
	if len(s.results) >= s.limit {
		s.more = true
		return
	}
	s.results = append(s.results, line)
}

func (s *search) walk(dir string) {
	entries, err := s.env.ReadDir(s.ctx, dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if s.full() {
			return
		}
		if s.visited++; s.visited > maxSearchEntries {
			s.truncated = true
			return
		}
		p := path.Join(dir, e.Name)
		if e.IsDir {
			if !skippedDirs[e.Name] {
				s.walk(p)
			}
			continue
		}
		s.file(p, e)
	}
}

func (s *search) file(p string, info backend.FileInfo) {
	if info.Mode&fs.ModeSymlink != 0 {
		target, err := s.env.Stat(s.ctx, p) // follow the link
		if err != nil || target.IsDir {
			return
		}
		info.Mode, info.Size = target.Mode, target.Size
	}
	if !info.Mode.IsRegular() { // devices, pipes and sockets would block or never end
		return
	}
	if s.fileGlob != "" {
		if ok, _ := path.Match(s.fileGlob, info.Name); !ok {
			return
		}
	}
	if s.re == nil {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, s.root), "/")
		var ok bool
		if strings.Contains(s.glob, "/") {
			ok, _ = doublestar.Match(s.glob, rel)
		} else {
			ok, _ = path.Match(s.glob, info.Name)
		}
		if ok {
			s.add(s.show(p))
		}
		return
	}
	if info.Size > maxSearchFileSize {
		s.skipped++
		return
	}
	data, err := s.env.ReadFile(s.ctx, p)
	if err != nil {
		return
	}
	if looksBinary(data) {
		s.skipped++
		return
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	lineNo := 0
	for line := range strings.Lines(text) {
		lineNo++
		line = strings.TrimRight(line, "\r\n")
		if !s.re.MatchString(line) {
			continue
		}
		if utf8.RuneCountInString(line) > maxMatchLineChars {
			line = line[:byteOffset(line, maxMatchLineChars)] + "..."
		}
		s.add(fmt.Sprintf("%s:%d: %s", s.show(p), lineNo, line))
		if s.more {
			return
		}
	}
}

func (s *search) report(target string) string {
	var b strings.Builder
	if len(s.results) == 0 {
		what := "no lines match " + fmt.Sprintf("%q", s.glob)
		if target == "files" {
			what = "no files match " + fmt.Sprintf("%q", s.glob)
		}
		fmt.Fprintf(&b, "%s under %s", what, s.display)
		if s.fileGlob != "" {
			fmt.Fprintf(&b, " (file_glob %q)", s.fileGlob)
		}
	} else {
		b.WriteString(strings.Join(s.results, "\n"))
	}
	if s.more {
		fmt.Fprintf(&b, "\n[limit of %d results reached; narrow the pattern or path, or raise limit]", s.limit)
	}
	if s.truncated {
		fmt.Fprintf(&b, "\n[stopped after visiting %d entries; search a narrower path]", maxSearchEntries)
	}
	if s.skipped > 0 {
		fmt.Fprintf(&b, "\n[%d binary or very large file(s) skipped]", s.skipped)
	}
	return b.String()
}
