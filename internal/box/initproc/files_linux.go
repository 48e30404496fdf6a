package initproc

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// fileOp serves ReadFile, WriteFile, Stat and ReadDir with the init's own
// (already restricted) rights.
func (s *initServer) fileOp(c *initConn, req wire.Request) {
	var resp wire.Response
	var err error
	switch req.Op {
	case wire.OpReadFile:
		resp.Data, err = os.ReadFile(req.Path)
	case wire.OpWriteFile:
		if c.attached {
			err = s.writeAttached(c, req)
		} else {
			err = writeFileAtomic(req.Path, req.Data, os.FileMode(req.Perm))
		}
	case wire.OpStat:
		var st os.FileInfo
		if st, err = os.Stat(req.Path); err == nil {
			w := toWireInfo(st)
			resp.Info = &w
		}
	case wire.OpChown:
		err = chownOp(c, req)
	case wire.OpReadDir:
		var entries []os.DirEntry
		entries, err = os.ReadDir(req.Path)
		for _, e := range entries {
			if st, ierr := e.Info(); ierr == nil {
				resp.Infos = append(resp.Infos, toWireInfo(st))
			}
		}
	default:
		err = fmt.Errorf("unknown operation %q", req.Op)
	}
	if err != nil {
		c.fc.Send(wire.ErrorResponse(req.ID, err))
		return
	}
	resp.ID, resp.Kind = req.ID, wire.KindOK
	c.fc.Send(resp)
}

func toWireInfo(st os.FileInfo) wire.FileInfo {
	return wire.FileInfo{Name: st.Name(), Size: st.Size(), Mode: uint32(st.Mode()), ModTime: st.ModTime(), IsDir: st.IsDir()}
}

// writeFileAtomic writes a temp file in the target directory, syncs it
// and renames it over path, creating parent directories.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if perm == 0 {
		perm = 0o644
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
