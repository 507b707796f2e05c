package rpc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/lifenet/lifenet/rpc/internal/ws"
)

// wsConn is the server end of a WebSocket connection that carries SRMP,
// seen as a byte stream so that the transport and the SRMP framing serve
// it as they serve a raw SRMP connection (one stack: see accept.go). Read
// yields the payload bytes of the peer's data messages, unmasked in the
// caller's buffer (no buffer of its own beyond the upgrade's reader);
// pings are answered, a close is echoed and ends the stream (io.EOF), and
// a frame that breaks RFC 6455 is closed with 1002 (1009 past MaxFrame).
// Write takes SRMP frames, whole or in pieces, and sends each as one
// binary message (NewLife's WebSocket peers read one SRMP message per
// WebSocket message).
//
// Read is called by the transport's receive goroutine only; Write by one
// writer at a time (the transport's); the control frames Read sends are
// serialized with Write by wmu.
type wsConn struct {
	net.Conn               // the upgraded connection (a *transport.HandedConn)
	r        *bufio.Reader // its reader, holding what came after the upgrade request
	maxFrame int

	// Read side.
	left   int64 // payload bytes of the current data frame still to read
	masked bool
	mask   [4]byte
	off    int  // offset in the current frame's payload, for unmasking
	frag   bool // a fragmented message's last frame is still to come
	ctl    [ws.MaxControlPayload]byte

	// Write side.
	wmu     sync.Mutex
	remain  int64 // bytes of the current SRMP frame still to write
	hdr     [8]byte
	hn      int    // bytes of a partial SRMP header in hdr
	pending []byte // a control frame to send at the next message boundary
	scratch []byte // header bytes of the frame being written
}

func newWSConn(c net.Conn, r *bufio.Reader, maxFrame int) *wsConn {
	return &wsConn{Conn: c, r: r, maxFrame: maxFrame}
}

// NetConn returns the connection under the WebSocket (TLS state).
func (c *wsConn) NetConn() net.Conn { return c.Conn }

// errWSFrame is the cause of a WebSocket connection closed for a frame
// that breaks RFC 6455.
var errWSFrame = errors.New("rpc: bad WebSocket frame")

// Read implements net.Conn.
func (c *wsConn) Read(b []byte) (int, error) {
	for {
		if c.left > 0 {
			n, err := c.r.Read(b[:min(int64(len(b)), c.left)])
			if c.masked {
				ws.Unmask(b[:n], c.mask, c.off)
			}
			c.off += n
			c.left -= int64(n)
			return n, err
		}
		h, err := c.readHeader()
		if err != nil {
			return 0, err
		}
		if err := c.frame(h); err != nil {
			return 0, err
		}
	}
}

// readHeader reads the next frame header.
func (c *wsConn) readHeader() (ws.Header, error) {
	need := 2
	for {
		b, err := c.r.Peek(need)
		if len(b) < need {
			return ws.Header{}, err
		}
		h, n, perr := ws.ParseHeader(b)
		switch {
		case perr != nil:
			return ws.Header{}, c.fail(ws.CloseProtocolError, perr)
		case n > 0:
			c.r.Discard(n)
			return h, nil
		}
		need += 2 // ParseHeader tells no length: grow until it has one (at most 14 bytes)
	}
}

// frame takes the header of the next frame: a data frame's payload is read
// by Read; a control frame is handled here.
func (c *wsConn) frame(h ws.Header) error {
	switch h.Op {
	case ws.Binary, ws.Text, ws.Continuation:
		if (h.Op == ws.Continuation) != c.frag {
			if c.frag {
				return c.fail(ws.CloseProtocolError, fmt.Errorf("a %v frame before the fragmented message ended", h.Op))
			}
			return c.fail(ws.CloseProtocolError, errors.New("a continuation frame with no message to continue"))
		}
		if h.Length > int64(c.maxFrame) {
			return c.fail(ws.CloseTooBig, fmt.Errorf("%w: a frame of %d bytes, limit %d (Framer.MaxFrame)", ErrTooLarge, h.Length, c.maxFrame))
		}
		c.frag, c.left, c.masked, c.mask, c.off = !h.Fin, h.Length, h.Masked, h.Mask, 0
		return nil
	}
	p := c.ctl[:h.Length] // a control frame's payload is at most 125 bytes (ParseHeader)
	if _, err := io.ReadFull(c.r, p); err != nil {
		return err
	}
	if h.Masked {
		ws.Unmask(p, h.Mask, 0)
	}
	switch h.Op {
	case ws.Ping:
		c.control(ws.AppendFrame(nil, ws.Pong, p, nil))
	case ws.Close:
		if !ws.ValidClosePayload(p) {
			return c.fail(ws.CloseProtocolError, errors.New("close frame with an invalid code or reason"))
		}
		code, _ := ws.CloseCode(p)
		if code == ws.CloseNoStatus {
			code = 0 // an empty close answers an empty close (1005 never goes on the wire)
		}
		c.control(ws.AppendClose(nil, code, "", nil))
		return io.EOF
	}
	return nil
}

// fail sends a close frame with code and why's text, and returns the error
// that ends the connection.
func (c *wsConn) fail(code uint16, why error) error {
	c.control(ws.AppendClose(nil, code, why.Error(), nil))
	return fmt.Errorf("%w: %w", errWSFrame, why)
}

// control sends a control frame now, or at the end of the message being
// written.
func (c *wsConn) control(frame []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.remain > 0 || c.hn > 0 {
		c.pending = frame
		return
	}
	c.Conn.SetWriteDeadline(time.Now().Add(wsControlWrite))
	c.Conn.Write(frame)
	c.Conn.SetWriteDeadline(time.Time{})
}

// wsControlWrite bounds the write of a control frame from the reading side.
const wsControlWrite = 5 * time.Second

// Write implements net.Conn: b holds SRMP frames, or pieces of them (the
// transport's batches), each sent as one binary message.
func (c *wsConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	total := len(b)
	for len(b) > 0 {
		if c.remain == 0 {
			k, err := c.takeHeader(b)
			b = b[k:]
			if err != nil {
				return total - len(b), err
			}
			continue
		}
		n := int(min(int64(len(b)), c.remain))
		if _, err := c.Conn.Write(b[:n]); err != nil {
			return total - len(b), err
		}
		b = b[n:]
		if c.remain -= int64(n); c.remain == 0 {
			if err := c.flushPending(); err != nil {
				return total - len(b), err
			}
		}
	}
	return total, nil
}

// takeHeader reads an SRMP header from the start of b (after the bytes of
// it held from an earlier write) and, once whole, writes the WebSocket
// header of a binary message that holds the whole SRMP frame and the SRMP
// header itself; it returns how many bytes of b it took.
func (c *wsConn) takeHeader(b []byte) (int, error) {
	need := 4
	if c.hn >= 4 && binary.LittleEndian.Uint16(c.hdr[2:4]) == 0xFFFF {
		need = 8
	}
	k := min(need-c.hn, len(b))
	copy(c.hdr[c.hn:], b[:k])
	c.hn += k
	if c.hn == 4 && need == 4 && binary.LittleEndian.Uint16(c.hdr[2:4]) == 0xFFFF {
		more, err := c.takeHeader(b[k:]) // an extended length follows
		return k + more, err
	}
	if c.hn < need {
		return k, nil
	}
	payload := int64(binary.LittleEndian.Uint16(c.hdr[2:4]))
	if need == 8 {
		payload = int64(binary.LittleEndian.Uint32(c.hdr[4:8]))
	}
	c.scratch = ws.AppendHeader(c.scratch[:0], ws.Binary, true, need+int(payload), nil)
	c.scratch = append(c.scratch, c.hdr[:need]...)
	c.hn = 0
	if _, err := c.Conn.Write(c.scratch); err != nil {
		return k, err
	}
	c.remain = payload
	if payload == 0 {
		return k, c.flushPending()
	}
	return k, nil
}

// flushPending writes a control frame held back by a message in progress.
func (c *wsConn) flushPending() error {
	if c.pending == nil {
		return nil
	}
	f := c.pending
	c.pending = nil
	_, err := c.Conn.Write(f)
	return err
}
