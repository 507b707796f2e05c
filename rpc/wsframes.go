package rpc

import (
	"errors"
	"fmt"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/rpc/internal/ws"
)

// errBadWSFrame marks a WebSocket frame that breaks the framing (RFC 6455
// §5): the server answers it with a 1002 close.
var errBadWSFrame = errors.New("rpc: bad WebSocket frame")

// errWSClosed stops the server's frame loop after it echoed a close.
var errWSClosed = errors.New("rpc: WebSocket closed")

// readWSFrames handles the whole WebSocket frames at the start of *buf, on
// either end of a connection: each data frame's payload goes to the next
// stage (the SRMP stage, which frames SRMP across messages), each control
// frame to control; an error from control (after a close) stops the loop
// and is returned. What was
// handled leaves *buf; an incomplete frame stays for the next read. A
// frame that breaks the framing returns errBadWSFrame (wrapping ws.Parse's
// error) with *buf emptied; an error of the next stage is returned as it is.
func readWSFrames(c *codec.HandlerContext, buf *[]byte, maxFrame int, control func(ws.Frame) error) error {
	b := *buf
	off := 0
	defer func() { *buf = b[:copy(b, b[off:])] }()
	for off < len(b) {
		f, n, err := ws.Parse(b[off:], maxFrame)
		if err != nil {
			off = len(b)
			return fmt.Errorf("%w: %w", errBadWSFrame, err)
		}
		if n == 0 {
			return nil
		}
		off += n
		switch f.Op {
		case ws.Binary, ws.Text, ws.Continuation:
			p := packet.Wrap(f.Payload)
			err = c.FireRead(p)
			p.Release()
			if err != nil {
				return err
			}
		default:
			if err := control(f); err != nil {
				return err
			}
		}
	}
	return nil
}
