package wire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// pipe is a bytes.Buffer as a connection.
type pipe struct{ bytes.Buffer }

func (*pipe) Close() error { return nil }

// filled returns a T with every field, nested ones too, set to a value
// other than its zero value, each different (a counter), so that a field
// the codec forgets, or takes for another, shows.
func filled[T any](t *testing.T) T {
	var v T
	n := 0
	fill(t, reflect.ValueOf(&v).Elem(), &n)
	return v
}

func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)) + time.Duration(*n).String())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(*n) * int64(time.Millisecond))
		} else {
			v.SetInt(-int64(*n) * 1000) // negative: zigzag
		}
	case reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n) * 100)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{byte(*n), 0, byte(*n + 1)})
			return
		}
		s := reflect.MakeSlice(v.Type(), 3, 3)
		for i := range 3 {
			fill(t, s.Index(i), n)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), n)
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(int64(*n)*1000, int64(*n))))
			return
		}
		for i := range v.NumField() {
			fill(t, v.Field(i), n)
		}
	default:
		t.Fatalf("filled: field kind %s (%s) has no test value: add it here and to the codec", v.Kind(), v.Type())
	}
}

func roundTrip[T any](t *testing.T, in T) T {
	t.Helper()
	var buf pipe
	c := NewConn(&buf)
	if err := c.Send(in); err != nil {
		t.Fatal(err)
	}
	var out T
	if err := c.Receive(&out); err != nil {
		t.Fatal(err)
	}
	if rest := buf.Len(); rest != 0 {
		t.Fatalf("%d bytes left after the frame", rest)
	}
	return out
}

// Every field of every frame type crosses: a field added to Request,
// Response or what they hold and not to codec.go fails here.
func TestCodecCarriesEveryField(t *testing.T) {
	req := filled[Request](t)
	if got := roundTrip(t, req); !reflect.DeepEqual(got, req) {
		t.Fatalf("request:\n got %+v\nwant %+v", got, req)
	}
	resp := filled[Response](t)
	if got := roundTrip(t, resp); !reflect.DeepEqual(got, resp) {
		t.Fatalf("response:\n got %+v\nwant %+v", got, resp)
	}
}

// Values a field's zero could be taken for are kept: empty strings in
// argv and the environment, uid 0 in the sudo list, the Unix epoch as a
// modification time, exit code 0 with a signal.
func TestCodecKeepsValuesThatLookEmpty(t *testing.T) {
	req := Request{ID: 1, Op: OpExec, Exec: &ExecSpec{Argv: []string{"printf", "", "x"}, Env: []string{""}},
		Setup: &InitSpec{SudoUIDs: []uint32{0, 1000}}}
	if got := roundTrip(t, req); !reflect.DeepEqual(got, req) {
		t.Fatalf("got %+v %+v, want %+v %+v", got.Exec, got.Setup, req.Exec, req.Setup)
	}
	resp := Response{Kind: KindExit, Exit: ExitInfo{Code: 0, Signal: "SIGKILL"},
		Infos: []FileInfo{{Name: "epoch", ModTime: time.Unix(0, 0)}, {Name: "never"}}}
	got := roundTrip(t, resp)
	if !reflect.DeepEqual(got, resp) || got.Infos[1].ModTime != (time.Time{}) {
		t.Fatalf("got %+v, want %+v", got, resp)
	}
}

// A receiver skips fields it does not know (a newer peer's) and every
// frame starts from zero: nothing of the previous frame is left.
func TestCodecSkipsUnknownFieldsAndResets(t *testing.T) {
	var e encoder
	e.str(reqOp, OpStat)
	e.b = protowire.AppendTag(e.b, 99, protowire.BytesType)
	e.b = protowire.AppendString(e.b, "from a newer hermes")
	e.b = protowire.AppendTag(e.b, 98, protowire.Fixed64Type)
	e.b = protowire.AppendFixed64(e.b, 7)
	e.str(reqPath, "/x")
	frame := protowire.AppendVarint(nil, uint64(len(e.b)))
	var buf pipe
	buf.Write(frame)
	buf.Write(e.b)
	c := NewConn(&buf)
	c.Send(Request{ID: 5, Op: OpStat, Path: "/y"})
	r := Request{ID: 9, Data: []byte("stale")}
	if err := c.Receive(&r); err != nil {
		t.Fatal(err)
	}
	if want := (Request{Op: OpStat, Path: "/x"}); !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v, want %+v", r, want)
	}
	if err := c.Receive(&r); err != nil || r.ID != 5 || r.Path != "/y" {
		t.Fatalf("second frame: %+v %v", r, err)
	}
	if err := c.Receive(&r); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

// Broken input is an error, never a panic or a huge allocation.
func TestCodecRefusesBrokenFrames(t *testing.T) {
	for name, tc := range map[string]struct {
		in   []byte
		want error
	}{
		"cut in the length":         {[]byte{0x80}, io.ErrUnexpectedEOF},
		"cut in the body":           {[]byte{0x05, 0x12, 0x01}, io.ErrUnexpectedEOF},
		"length over 64 bits":       {bytes.Repeat([]byte{0xff}, 11), ErrBadFrame},
		"length over the limit":     {[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40}, ErrFrameTooBig},
		"field cut short":           {[]byte{0x03, 0x12, 0x05, 'e'}, ErrBadFrame},
		"field number 0":            {[]byte{0x02, 0x00, 0x01}, ErrBadFrame},
		"nested message cut short":  {[]byte{0x04, 0x1a, 0x02, 0x0a, 0x05}, ErrBadFrame},
		"group without its end tag": {[]byte{0x01, 0x0b}, ErrBadFrame},
	} {
		t.Run(name, func(t *testing.T) {
			var buf pipe
			buf.Write(tc.in)
			var r Request
			if err := NewLimitedConn(&buf, 1<<20).Receive(&r); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// A frame decodes to about its own size: one of many empty strings (2
// bytes on the wire, 16 in memory each) is refused past a field per 8
// bytes of the connection's limit, one of as many as a command line can
// hold is not (attacker trial, 2026-12-06).
func TestCodecBoundsFieldsBySize(t *testing.T) {
	frame := func(entries int) *pipe {
		var e encoder
		e.str(reqOp, OpExec)
		e.msg(reqExec, func(e *encoder) { e.strs(execArgv, make([]string, entries)) })
		var buf pipe
		buf.Write(protowire.AppendVarint(nil, uint64(len(e.b))))
		buf.Write(e.b)
		return &buf
	}
	var r Request
	if err := NewLimitedConn(frame(300_000), MaxAttachFrame).Receive(&r); !errors.Is(err, ErrBadFrame) {
		t.Fatalf("300,000 empty argv entries in a 2 MiB-limit frame: %v, want ErrBadFrame", err)
	}
	if err := NewLimitedConn(frame(200_000), MaxAttachFrame).Receive(&r); err != nil || len(r.Exec.Argv) != 200_000 {
		t.Fatalf("200,000 entries (about what execve takes): %v", err)
	}
}

// FuzzReceive: any bytes decode to frames or an error; a frame re-sent
// decodes to itself.
func FuzzReceive(f *testing.F) {
	for _, r := range []Request{{ID: 1, Op: OpExec, Exec: &ExecSpec{Argv: []string{"sh", "-c", "true"}, Env: []string{"A=b"}, RunAs: &Account{UID: 1}}},
		{ID: 2, Op: OpSetup, Setup: &InitSpec{Task: "t", Lower: []string{"/"}, SudoUIDs: []uint32{0}}}} {
		var buf pipe
		NewConn(&buf).Send(r)
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		var in pipe
		in.Write(data)
		c := NewLimitedConn(&in, 4096)
		for {
			var r Request
			if c.Receive(&r) != nil {
				return
			}
			if again := roundTrip(t, r); !reflect.DeepEqual(again, r) {
				t.Fatalf("re-sent %+v came back as %+v", r, again)
			}
		}
	})
}
