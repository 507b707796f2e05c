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
// *frag is the connection's fragmentation state (a message's last frame
// not yet read): a continuation frame with no message to continue, or a
// new message before the last one ended, breaks the framing (RFC 6455
// §5.4), where NewLife reads any data frame's payload.
func readWSFrames(c *codec.HandlerContext, buf *[]byte, maxFrame int, frag *bool, control func(ws.Frame) error) error {
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
			b, off = roomForFrame(b[:copy(b, b[off:])]), 0
			return nil
		}
		off += n
		switch f.Op {
		case ws.Binary, ws.Text, ws.Continuation:
			if (f.Op == ws.Continuation) != *frag {
				off = len(b)
				if *frag {
					return fmt.Errorf("%w: a %v frame before the fragmented message ended", errBadWSFrame, f.Op)
				}
				return fmt.Errorf("%w: a continuation frame with no message to continue", errBadWSFrame)
			}
			*frag = !f.Fin
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

// roomForFrame returns b, which starts with an incomplete frame, with room
// towards the whole frame once its header is in (Parse has bounded its
// length by maxFrame), as its payload comes (growTowards).
func roomForFrame(b []byte) []byte {
	h, hn, err := ws.ParseHeader(b)
	if err != nil || hn == 0 {
		return b
	}
	return growTowards(b, hn+int(h.Length), len(b))
}
