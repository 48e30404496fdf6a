package wire

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The frames are encoded in the protocol buffers wire format
// (protobuf.dev/programming-guides/encoding; `protoc --decode_raw` reads
// one), written and read by hand with protowire: no reflection and no type
// registry, so the box's init pays no encoder's package init or per-type
// engines (encoding/gob cost a running box's init about 200 KiB, issue 26).
// Field numbers are below, per message; a field at its zero value is not
// sent; repeated fields are one entry per element; a reader skips fields
// it does not know, so a field may be added under a new number without a
// Version change. Signed integers are zigzag varints; durations are
// nanoseconds; times are Unix seconds and nanoseconds.
//
// TestCodecCarriesEveryField fails when a field of a frame type is not
// encoded here.

// Request fields.
const (
	reqID protowire.Number = iota + 1
	reqOp
	reqSetup
	reqExec
	reqPath
	reqData
	reqPerm
	reqPort
	reqSignal
	reqRows
	reqCols
	reqVersion
	reqOffset
	reqMore
	reqOwner
)

// Response fields.
const (
	respID protowire.Number = iota + 1
	respKind
	respData
	respPID
	respExit
	respErr
	respErrKind
	respInfo
	respInfos
	respPhases
	respShell
	respStream
	respAttach
)

// ExecSpec fields.
const (
	execArgv protowire.Number = iota + 1
	execDir
	execEnv
	execTimeout
	execStdin
	execSearch
	execStderr
	execTTY
	execRows
	execCols
	execRunAs
)

// InitSpec fields.
const (
	specTask protowire.Number = iota + 1
	specSwitchUsers
	specLower
	specLayerDir
	specLayerImage
	specLayerMounted
	specDiskMiB
	specTmpMiB
	specMerged
	specWorkspace
	specWorkspaceOverlay
	specProtected
	specEmpty
	specHide
	specHermesExe
	specHermesNames
	specHostname
	specCACertPEM
	specEgressPort
	specUserNS
	specLandlock
	specAttachSocket
	specAttachIdle
	specEnv
	specCgroup
	specSudoUIDs
	specSudoPathDirs
)

// Fields of the small messages: Account, ExitInfo, FileInfo, InitPhases
// and AttachInfo.
const (
	accountUID protowire.Number = iota + 1
	accountGID
)

const (
	exitCode protowire.Number = iota + 1
	exitSignal
	exitTimedOut
)

const (
	infoName protowire.Number = iota + 1
	infoSize
	infoMode
	infoModSec
	infoModNsec
	infoIsDir
)

const (
	phasesRoot protowire.Number = iota + 1
	phasesRestrict
)

const (
	attachTask protowire.Number = iota + 1
	attachEnv
	attachWorkdir
	attachCgroup
	attachProtocol
	attachBindWorkspace
)

// encoder appends fields to b.
type encoder struct{ b []byte }

func (e *encoder) uint(n protowire.Number, v uint64) {
	if v != 0 {
		e.b = appendVarintField(e.b, n, v)
	}
}

// appendVarintField appends field n with value v, even 0.
func appendVarintField(b []byte, n protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, n, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func (e *encoder) int(n protowire.Number, v int64) { e.uint(n, protowire.EncodeZigZag(v)) }

func (e *encoder) bool(n protowire.Number, v bool) {
	if v {
		e.uint(n, 1)
	}
}

func (e *encoder) str(n protowire.Number, s string) {
	if s != "" {
		e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
		e.b = protowire.AppendString(e.b, s)
	}
}

func (e *encoder) bytes(n protowire.Number, v []byte) {
	if len(v) > 0 {
		e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, v)
	}
}

// strs sends every element, empty ones too.
func (e *encoder) strs(n protowire.Number, ss []string) {
	for _, s := range ss {
		e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
		e.b = protowire.AppendString(e.b, s)
	}
}

// msg sends a nested message that fill encodes.
func (e *encoder) msg(n protowire.Number, fill func(*encoder)) {
	var sub encoder
	fill(&sub)
	e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, sub.b)
}

// ErrBadFrame is a frame that is not of this protocol: cut short, a
// malformed field, or more fields than its size allows. A known field
// sent with another wire type than its own is read as its zero value.
var ErrBadFrame = errors.New("malformed box protocol frame")

// decoder decodes one frame: left is how many more fields (repeated
// entries included, at any depth) it takes. An empty string costs 2 bytes
// on the wire and 16 in memory, and the frame limit is of bytes on the
// wire: the count keeps what a frame decodes to near its size (attacker
// trial, 2026-12-06: 2 MiB frames of empty argv entries took the init to
// 3.1 GB).
type decoder struct{ left int }

// newDecoder is a decoder for a frame of a connection with frame limit
// max: a field per 8 bytes of the limit, at least 4096.
func newDecoder(max uint64) *decoder {
	return &decoder{left: int(min(max/8, 1<<40)) + 4096}
}

// errTooManyFields ends a frame with more fields than its decoder takes.
var errTooManyFields = fmt.Errorf("%w: too many fields for its size", ErrBadFrame)

// field is one decoded field: v for a varint, b for bytes (aliasing the
// frame).
type field struct {
	num protowire.Number
	v   uint64
	b   []byte
}

// fields calls fn for each field of b in order, skipping fields of other
// types; fn's error ends the walk.
func (d *decoder) fields(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrBadFrame, protowire.ParseError(n))
		}
		b = b[n:]
		f := field{num: num}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n >= 0 {
				b = b[n:]
				continue
			}
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrBadFrame, num, protowire.ParseError(n))
		}
		b = b[n:]
		if d.left--; d.left < 0 {
			return errTooManyFields
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// data is a bytes field, nil when empty (the encoder sends no empty one).
func (f field) data() []byte {
	if len(f.b) == 0 {
		return nil
	}
	return f.b
}

func (f field) int() int64         { return protowire.DecodeZigZag(f.v) }
func (f field) bool() bool         { return f.v != 0 }
func (f field) str() string        { return string(f.b) }
func (f field) u32() uint32        { return uint32(f.v) }
func (f field) u16() uint16        { return uint16(f.v) }
func (f field) dur() time.Duration { return time.Duration(f.int()) }

func encodeRequest(e *encoder, r *Request) {
	e.uint(reqID, r.ID)
	e.str(reqOp, r.Op)
	if r.Setup != nil {
		e.msg(reqSetup, func(e *encoder) { encodeInitSpec(e, r.Setup) })
	}
	if r.Exec != nil {
		e.msg(reqExec, func(e *encoder) { encodeExecSpec(e, r.Exec) })
	}
	e.str(reqPath, r.Path)
	e.bytes(reqData, r.Data)
	e.uint(reqPerm, uint64(r.Perm))
	e.int(reqPort, int64(r.Port))
	e.int(reqSignal, int64(r.Signal))
	e.uint(reqRows, uint64(r.Rows))
	e.uint(reqCols, uint64(r.Cols))
	e.int(reqVersion, int64(r.Version))
	e.int(reqOffset, r.Offset)
	e.bool(reqMore, r.More)
	if r.Owner != nil {
		e.msg(reqOwner, func(e *encoder) { encodeAccount(e, r.Owner) })
	}
}

func (d *decoder) decodeRequest(b []byte, r *Request) error {
	return d.fields(b, func(f field) (err error) {
		switch f.num {
		case reqID:
			r.ID = f.v
		case reqOp:
			r.Op = f.str()
		case reqSetup:
			r.Setup = new(InitSpec)
			err = d.decodeInitSpec(f.b, r.Setup)
		case reqExec:
			r.Exec = new(ExecSpec)
			err = d.decodeExecSpec(f.b, r.Exec)
		case reqPath:
			r.Path = f.str()
		case reqData:
			r.Data = f.data()
		case reqPerm:
			r.Perm = f.u32()
		case reqPort:
			r.Port = int(f.int())
		case reqSignal:
			r.Signal = int(f.int())
		case reqRows:
			r.Rows = f.u16()
		case reqCols:
			r.Cols = f.u16()
		case reqVersion:
			r.Version = int(f.int())
		case reqOffset:
			r.Offset = f.int()
		case reqMore:
			r.More = f.bool()
		case reqOwner:
			r.Owner = new(Account)
			err = d.decodeAccount(f.b, r.Owner)
		}
		return err
	})
}

func encodeResponse(e *encoder, r *Response) {
	e.uint(respID, r.ID)
	e.str(respKind, r.Kind)
	e.bytes(respData, r.Data)
	e.int(respPID, int64(r.PID))
	if r.Exit != (ExitInfo{}) {
		e.msg(respExit, func(e *encoder) {
			e.int(exitCode, int64(r.Exit.Code))
			e.str(exitSignal, r.Exit.Signal)
			e.bool(exitTimedOut, r.Exit.TimedOut)
		})
	}
	e.str(respErr, r.Err)
	e.str(respErrKind, r.ErrKind)
	if r.Info != nil {
		e.msg(respInfo, func(e *encoder) { encodeFileInfo(e, r.Info) })
	}
	for i := range r.Infos {
		e.msg(respInfos, func(e *encoder) { encodeFileInfo(e, &r.Infos[i]) })
	}
	if r.Phases != nil {
		e.msg(respPhases, func(e *encoder) {
			e.int(phasesRoot, int64(r.Phases.Root))
			e.int(phasesRestrict, int64(r.Phases.Restrict))
		})
	}
	e.str(respShell, r.Shell)
	e.int(respStream, int64(r.Stream))
	if r.Attach != nil {
		e.msg(respAttach, func(e *encoder) { encodeAttachInfo(e, r.Attach) })
	}
}

func (d *decoder) decodeResponse(b []byte, r *Response) error {
	return d.fields(b, func(f field) (err error) {
		switch f.num {
		case respID:
			r.ID = f.v
		case respKind:
			r.Kind = f.str()
		case respData:
			r.Data = f.data()
		case respPID:
			r.PID = int(f.int())
		case respExit:
			err = d.fields(f.b, func(f field) error {
				switch f.num {
				case exitCode:
					r.Exit.Code = int(f.int())
				case exitSignal:
					r.Exit.Signal = f.str()
				case exitTimedOut:
					r.Exit.TimedOut = f.bool()
				}
				return nil
			})
		case respErr:
			r.Err = f.str()
		case respErrKind:
			r.ErrKind = f.str()
		case respInfo:
			r.Info = new(FileInfo)
			err = d.decodeFileInfo(f.b, r.Info)
		case respInfos:
			var fi FileInfo
			err = d.decodeFileInfo(f.b, &fi)
			r.Infos = append(r.Infos, fi)
		case respPhases:
			r.Phases = new(InitPhases)
			err = d.fields(f.b, func(f field) error {
				switch f.num {
				case phasesRoot:
					r.Phases.Root = f.dur()
				case phasesRestrict:
					r.Phases.Restrict = f.dur()
				}
				return nil
			})
		case respShell:
			r.Shell = f.str()
		case respStream:
			r.Stream = int(f.int())
		case respAttach:
			r.Attach = new(AttachInfo)
			err = d.decodeAttachInfo(f.b, r.Attach)
		}
		return err
	})
}

func encodeAccount(e *encoder, a *Account) {
	e.uint(accountUID, uint64(a.UID))
	e.uint(accountGID, uint64(a.GID))
}

func (d *decoder) decodeAccount(b []byte, a *Account) error {
	return d.fields(b, func(f field) error {
		switch f.num {
		case accountUID:
			a.UID = f.u32()
		case accountGID:
			a.GID = f.u32()
		}
		return nil
	})
}

func encodeFileInfo(e *encoder, fi *FileInfo) {
	e.str(infoName, fi.Name)
	e.int(infoSize, fi.Size)
	e.uint(infoMode, uint64(fi.Mode))
	if !fi.ModTime.IsZero() {
		// Both sent even when 0, so that the Unix epoch is not taken for
		// the zero time.
		e.b = appendVarintField(e.b, infoModSec, protowire.EncodeZigZag(fi.ModTime.Unix()))
		e.b = appendVarintField(e.b, infoModNsec, uint64(fi.ModTime.Nanosecond()))
	}
	e.bool(infoIsDir, fi.IsDir)
}

func (d *decoder) decodeFileInfo(b []byte, fi *FileInfo) error {
	var sec, nsec int64
	var timed bool
	err := d.fields(b, func(f field) error {
		switch f.num {
		case infoName:
			fi.Name = f.str()
		case infoSize:
			fi.Size = f.int()
		case infoMode:
			fi.Mode = f.u32()
		case infoModSec:
			sec, timed = f.int(), true
		case infoModNsec:
			nsec, timed = int64(f.v%1e9), true
		case infoIsDir:
			fi.IsDir = f.bool()
		}
		return nil
	})
	if timed {
		fi.ModTime = time.Unix(sec, nsec)
	}
	return err
}

func encodeAttachInfo(e *encoder, a *AttachInfo) {
	e.str(attachTask, a.Task)
	e.strs(attachEnv, a.Env)
	e.str(attachWorkdir, a.Workdir)
	e.str(attachCgroup, a.Cgroup)
	e.int(attachProtocol, int64(a.Protocol))
	e.bool(attachBindWorkspace, a.BindWorkspace)
}

func (d *decoder) decodeAttachInfo(b []byte, a *AttachInfo) error {
	return d.fields(b, func(f field) error {
		switch f.num {
		case attachTask:
			a.Task = f.str()
		case attachEnv:
			a.Env = append(a.Env, f.str())
		case attachWorkdir:
			a.Workdir = f.str()
		case attachCgroup:
			a.Cgroup = f.str()
		case attachProtocol:
			a.Protocol = int(f.int())
		case attachBindWorkspace:
			a.BindWorkspace = f.bool()
		}
		return nil
	})
}

func encodeExecSpec(e *encoder, x *ExecSpec) {
	e.strs(execArgv, x.Argv)
	e.str(execDir, x.Dir)
	e.strs(execEnv, x.Env)
	e.int(execTimeout, int64(x.Timeout))
	e.bool(execStdin, x.Stdin)
	e.bool(execSearch, x.Search)
	e.bool(execStderr, x.Stderr)
	e.bool(execTTY, x.TTY)
	e.uint(execRows, uint64(x.Rows))
	e.uint(execCols, uint64(x.Cols))
	if x.RunAs != nil {
		e.msg(execRunAs, func(e *encoder) { encodeAccount(e, x.RunAs) })
	}
}

func (d *decoder) decodeExecSpec(b []byte, x *ExecSpec) error {
	return d.fields(b, func(f field) (err error) {
		switch f.num {
		case execArgv:
			x.Argv = append(x.Argv, f.str())
		case execDir:
			x.Dir = f.str()
		case execEnv:
			x.Env = append(x.Env, f.str())
		case execTimeout:
			x.Timeout = f.dur()
		case execStdin:
			x.Stdin = f.bool()
		case execSearch:
			x.Search = f.bool()
		case execStderr:
			x.Stderr = f.bool()
		case execTTY:
			x.TTY = f.bool()
		case execRows:
			x.Rows = f.u16()
		case execCols:
			x.Cols = f.u16()
		case execRunAs:
			x.RunAs = new(Account)
			err = d.decodeAccount(f.b, x.RunAs)
		}
		return err
	})
}
