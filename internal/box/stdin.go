package box

import (
	"os"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// Stdin of box commands is flow-controlled: the sender keeps at most
// wire.StdinWindow frames of a command unacknowledged (wire.KindStdinAck), so the
// init never queues more than that and never drops one.

// stdinChunk is the largest stdin frame sent to the init.
const stdinChunk = 32 << 10

// sendStdin sends data as stdin frames of at most stdinChunk bytes, each
// once the init has acknowledged all but wire.StdinWindow-1 of those before it
// (so a command that reads slowly, or late, gets every byte, and the
// connection's other traffic is never held up behind it).
func (p *boxProcess) sendStdin(data []byte) error {
	for len(data) > 0 {
		n := min(len(data), stdinChunk)
		select {
		case p.credit <- struct{}{}:
		case <-p.done:
			return os.ErrClosed
		}
		if err := p.box.fc.Send(wire.Request{ID: p.id, Op: wire.OpStdin, Data: append([]byte(nil), data[:n]...)}); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// Write sends data to the command's stdin (backend.Process), waiting
// while wire.StdinWindow frames of it are unacknowledged.
func (p *boxProcess) Write(data []byte) (int, error) {
	if p.Done() {
		return 0, os.ErrClosed
	}
	if err := p.sendStdin(data); err != nil {
		return 0, err
	}
	return len(data), nil
}

// CloseStdin ends the command's stdin (EOF once the data sent before is
// written).
func (p *boxProcess) CloseStdin() error {
	return p.box.fc.Send(wire.Request{ID: p.id, Op: wire.OpCloseStdin})
}
