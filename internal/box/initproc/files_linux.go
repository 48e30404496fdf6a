package initproc

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// fileOp serves ReadFile, WriteFile, Stat and ReadDir with the init's own
// (already restricted) rights.
func (s *initServer) fileOp(c *initConn, req wire.Request) {
	if s.fileSlots != nil {
		s.fileSlots <- struct{}{}
		defer func() { <-s.fileSlots }()
	}
	var resp wire.Response
	var err error
	switch req.Op {
	case wire.OpReadFile:
		resp.Data, err = readRegularFile(req.Path)
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

// readRegularFile reads path (links followed, inside the box) when it is a
// regular file of at most wire.MaxFileData bytes. Anything else is refused
// without reading: a FIFO would hold the init's thread until a writer
// came (for good), a device such as /dev/zero would never end, and the
// init's memory and the host's hold the whole file (attacker trial,
// 2026-12-06). The FIFO is opened O_NONBLOCK, so that the open returns.
func readRegularFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err == nil && !st.Mode().IsRegular() {
		return nil, notRegular(path, st)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st) // swapped since the first look
	}
	tooBig := &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("file too large: more than %d MiB, which hermes reads in one piece (copy it out in parts, e.g. with split)", wire.MaxFileData>>20)}
	if st.Size() > wire.MaxFileData {
		return nil, tooBig
	}
	data := make([]byte, 0, st.Size()+512)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if len(data) > wire.MaxFileData {
			return nil, tooBig // it grew while read
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // room for more
		}
	}
}

func notRegular(path string, st os.FileInfo) error {
	return &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file (%s): hermes reads regular files only", st.Mode().Type())}
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
