package sandboxserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/envd/filesystem"
	"github.com/hermes-go/hermes/internal/envd/filesystem/filesystemconnect"
)

// maxListEntries bounds one ListDir answer.
const maxListEntries = 100_000

// filesystemService is envd's filesystem.Filesystem on boxes. Stat and
// ListDir use the box's file operations; MakeDir, Move and Remove run
// mkdir, mv and rm in the box (paths travel in the environment).
type filesystemService struct {
	filesystemconnect.UnimplementedFilesystemHandler
	s *Server
}

func fsError(op, p string, err error) error {
	code := connect.CodeInternal
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = connect.CodeNotFound
	case errors.Is(err, fs.ErrPermission):
		code = connect.CodePermissionDenied
	case errors.Is(err, fs.ErrExist):
		code = connect.CodeAlreadyExists
	}
	return connect.NewError(code, opError(op, p, err))
}

// opError prefixes err with the operation and path, unless err (a box's
// file error, an fs.PathError) names the path already.
func opError(op, p string, err error) error {
	if strings.Contains(err.Error(), p) {
		return err
	}
	return fmt.Errorf("%s %s: %w", op, p, err)
}

func entry(p string, fi backend.FileInfo) *filesystem.EntryInfo {
	t := filesystem.FileType_FILE_TYPE_FILE
	if fi.IsDir {
		t = filesystem.FileType_FILE_TYPE_DIRECTORY
	} else if fi.Mode&fs.ModeSymlink != 0 {
		t = filesystem.FileType_FILE_TYPE_SYMLINK
	}
	return &filesystem.EntryInfo{Name: path.Base(p), Type: t, Path: p, Size: fi.Size, Mode: uint32(fi.Mode.Perm()),
		Permissions: fi.Mode.String(), Owner: "user", Group: "user", ModifiedTime: timestamppb.New(fi.ModTime)}
}

func (f *filesystemService) envOf(ctx context.Context) (backend.Environment, error) {
	env, err := f.s.userEnv(ctx, sandboxOf(ctx))
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	return env, nil
}

// run runs script in the box with env; a non-zero exit is an error with
// the command's output.
func run(ctx context.Context, env backend.Environment, script string, vars map[string]string) error {
	res, err := env.Exec(ctx, backend.ExecRequest{Command: script, Env: vars, Workdir: "/"})
	if err != nil {
		return connect.NewError(connect.CodeUnavailable, err)
	}
	if res.ExitCode != 0 {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("%s", res.Output))
	}
	return nil
}

func (f *filesystemService) Stat(ctx context.Context, req *connect.Request[filesystem.StatRequest]) (*connect.Response[filesystem.StatResponse], error) {
	env, err := f.envOf(ctx)
	if err != nil {
		return nil, err
	}
	p := resolvePath(req.Msg.GetPath())
	fi, err := env.Stat(ctx, p)
	if err != nil {
		return nil, fsError("stat", p, err)
	}
	return connect.NewResponse(&filesystem.StatResponse{Entry: entry(p, fi)}), nil
}

func (f *filesystemService) MakeDir(ctx context.Context, req *connect.Request[filesystem.MakeDirRequest]) (*connect.Response[filesystem.MakeDirResponse], error) {
	env, err := f.envOf(ctx)
	if err != nil {
		return nil, err
	}
	p := resolvePath(req.Msg.GetPath())
	if _, err := env.Stat(ctx, p); err == nil {
		return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("directory %s already exists", p))
	}
	if err := run(ctx, env, `mkdir -p -- "$E2B_P" 2>&1`, map[string]string{"E2B_P": p}); err != nil {
		return nil, err
	}
	fi, err := env.Stat(ctx, p)
	if err != nil {
		return nil, fsError("stat", p, err)
	}
	return connect.NewResponse(&filesystem.MakeDirResponse{Entry: entry(p, fi)}), nil
}

func (f *filesystemService) Move(ctx context.Context, req *connect.Request[filesystem.MoveRequest]) (*connect.Response[filesystem.MoveResponse], error) {
	env, err := f.envOf(ctx)
	if err != nil {
		return nil, err
	}
	src, dst := resolvePath(req.Msg.GetSource()), resolvePath(req.Msg.GetDestination())
	if _, err := env.Stat(ctx, src); err != nil {
		return nil, fsError("move", src, err)
	}
	if err := run(ctx, env, `mkdir -p -- "$(dirname -- "$E2B_D")" && mv -f -T -- "$E2B_S" "$E2B_D" 2>&1`, map[string]string{"E2B_S": src, "E2B_D": dst}); err != nil {
		return nil, err
	}
	fi, err := env.Stat(ctx, dst)
	if err != nil {
		return nil, fsError("stat", dst, err)
	}
	return connect.NewResponse(&filesystem.MoveResponse{Entry: entry(dst, fi)}), nil
}

func (f *filesystemService) Remove(ctx context.Context, req *connect.Request[filesystem.RemoveRequest]) (*connect.Response[filesystem.RemoveResponse], error) {
	env, err := f.envOf(ctx)
	if err != nil {
		return nil, err
	}
	p := resolvePath(req.Msg.GetPath())
	if _, err := env.Stat(ctx, p); err != nil {
		return nil, fsError("remove", p, err)
	}
	if err := run(ctx, env, `rm -rf -- "$E2B_P" 2>&1`, map[string]string{"E2B_P": p}); err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.RemoveResponse{}), nil
}

// ListDir lists path to depth levels (default 1).
func (f *filesystemService) ListDir(ctx context.Context, req *connect.Request[filesystem.ListDirRequest]) (*connect.Response[filesystem.ListDirResponse], error) {
	env, err := f.envOf(ctx)
	if err != nil {
		return nil, err
	}
	root := resolvePath(req.Msg.GetPath())
	fi, err := env.Stat(ctx, root)
	if err != nil {
		return nil, fsError("list", root, err)
	}
	if !fi.IsDir {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path %s is not a directory", root))
	}
	depth := int(req.Msg.GetDepth())
	if depth == 0 {
		depth = 1
	}
	out := &filesystem.ListDirResponse{}
	var walk func(dir string, level int) error
	walk = func(dir string, level int) error {
		infos, err := env.ReadDir(ctx, dir)
		if err != nil {
			return fsError("list", dir, err)
		}
		for _, in := range infos {
			p := path.Join(dir, in.Name)
			if len(out.Entries) >= maxListEntries {
				return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("listing %s is over %d entries: ask for less depth", root, maxListEntries))
			}
			out.Entries = append(out.Entries, entry(p, in))
			if in.IsDir && level < depth {
				if err := walk(p, level+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, 1); err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}
