package rpc

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/rpc/internal/ws"
)

// wsClient is the first stage of a ws:// connection: it sends the
// WebSocket handshake when the connection opens, checks the server's 101,
// then unwraps inbound messages for the SRMP stage and sends each outbound
// SRMP frame as one masked binary message. Calls made before the 101
// arrives follow the handshake on the wire, where the server reads them
// after it.
type wsClient struct {
	host, path string
	key        string
	open       bool   // the 101 arrived (reading goroutine only)
	buf        []byte // inbound bytes not yet handled
	frag       bool   // a fragmented message's last frame is still to come
	maxFrame   int    // the largest WebSocket message taken (ClientConfig.Framer.MaxFrame)
}

func wsClientStage(u *url.URL, maxFrame int) func() codec.Handler {
	path := u.RequestURI()
	return func() codec.Handler { return &wsClient{host: u.Host, path: path, maxFrame: maxFrame} }
}

// Opened implements [codec.OpenHandler]: the handshake request.
func (w *wsClient) Opened(c *codec.HandlerContext) error {
	key, err := ws.NewKey(rand.Reader)
	if err != nil {
		return err
	}
	w.key = key
	return c.WriteBytes(ws.AppendRequest(nil, w.host, w.path, key, "SRMP"))
}

// Read implements codec.Handler.
func (w *wsClient) Read(c *codec.HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireRead(msg)
	}
	w.buf = p.AppendTo(w.buf)
	if !w.open {
		end := bytes.Index(w.buf, []byte("\r\n\r\n"))
		if end < 0 {
			if len(w.buf) > defaultMaxHTTPHeader {
				return fmt.Errorf("%w: handshake response too large", ws.ErrHandshake)
			}
			return nil
		}
		end += 4
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(w.buf[:end])), nil)
		if err != nil {
			return fmt.Errorf("%w: %v", ws.ErrHandshake, err)
		}
		resp.Body.Close()
		if err := ws.CheckResponse(resp, w.key); err != nil {
			return err
		}
		w.open = true
		w.buf = w.buf[:copy(w.buf, w.buf[end:])]
	}
	return readWSFrames(c, &w.buf, w.maxFrame, &w.frag, func(f ws.Frame) error {
		switch f.Op {
		case ws.Ping:
			mask := newMask()
			c.WriteBytes(ws.AppendFrame(nil, ws.Pong, f.Payload, &mask))
		case ws.Close:
			return fmt.Errorf("%w: the server closed the WebSocket", codec.ErrConnClosed)
		}
		return nil
	})
}

// Write implements codec.Handler: one masked binary message per frame.
func (w *wsClient) Write(c *codec.HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireWrite(msg)
	}
	mask := newMask()
	frame := ws.AppendFrame(nil, ws.Binary, p.AppendTo(nil), &mask)
	p.Release()
	return c.WriteBytes(frame)
}

// newMask returns a frame mask. RFC 6455 asks for unpredictable masks so
// that a client's data cannot steer proxy caches; a fast generator
// seeded from the OS per process is enough for that.
func newMask() [4]byte {
	var m [4]byte
	v := mrand.Uint32()
	m[0], m[1], m[2], m[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	return m
}

var _ codec.OpenHandler = (*wsClient)(nil) // the handshake runs when the connection opens

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
