package rpc

import (
	"bufio"
	"bytes"
	"crypto/rand"
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
