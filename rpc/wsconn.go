package rpc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc/internal/ws"
	"github.com/lifenet/lifenet/transport"
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
	expire   time.Duration // Framer.Expire: how long a frame or message may take to come whole
	wtimeout time.Duration // Transport.WriteTimeout: a control frame's write

	// Read deadlines: the transport's (idle, drain), and the one of the
	// unit in progress (a frame or fragmented message begun), the earlier
	// applied.
	deadline  time.Time
	unitSince time.Time
	unitHit   bool // the applied deadline is the unit's

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

func newWSConn(c net.Conn, r *bufio.Reader, maxFrame int, expire, writeTimeout time.Duration) *wsConn {
	return &wsConn{Conn: c, r: r, maxFrame: maxFrame, expire: expire, wtimeout: writeTimeout}
}

// SetReadDeadline implements net.Conn: the transport's deadline, applied
// unless a unit in progress must end sooner.
func (c *wsConn) SetReadDeadline(t time.Time) error {
	c.deadline = t
	return c.applyDeadline()
}

// applyDeadline sets the connection's read deadline: the transport's, or
// Expire after the start of the frame or message in progress when that is
// sooner, as a partial SRMP frame expires (codec.ErrFrameExpired).
func (c *wsConn) applyDeadline() error {
	inUnit := c.left > 0 || c.frag || c.r.Buffered() > 0
	switch {
	case !inUnit || c.expire <= 0:
		c.unitSince = time.Time{}
	case c.unitSince.IsZero():
		c.unitSince = time.Now()
	}
	d := c.deadline
	c.unitHit = false
	if !c.unitSince.IsZero() {
		if u := c.unitSince.Add(c.expire); d.IsZero() || u.Before(d) {
			d, c.unitHit = u, true
		}
	}
	return c.Conn.SetReadDeadline(d)
}

// readErr names a read that ended at the deadline of a unit in progress.
func (c *wsConn) readErr(err error) error {
	if c.unitHit && errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: a WebSocket frame or message not whole within %v (Framer.Expire)", codec.ErrFrameExpired, c.expire)
	}
	return err
}

// NetConn returns the connection under the WebSocket (TLS state).
func (c *wsConn) NetConn() net.Conn { return c.Conn }

// errWSFrame is the cause of a WebSocket connection closed for a frame
// that breaks RFC 6455.
var errWSFrame = errors.New("rpc: bad WebSocket frame")

// Read implements net.Conn.
func (c *wsConn) Read(b []byte) (int, error) {
	for {
		c.applyDeadline()
		if c.left > 0 {
			n, err := c.r.Read(b[:min(int64(len(b)), c.left)])
			if c.masked {
				ws.Unmask(b[:n], c.mask, c.off)
			}
			c.off += n
			c.left -= int64(n)
			return n, c.readErr(err)
		}
		h, err := c.readHeader()
		if err != nil {
			return 0, c.readErr(err)
		}
		if err := c.frame(h); err != nil {
			return 0, err
		}
	}
}

// readHeader reads the next frame header.
func (c *wsConn) readHeader() (ws.Header, error) {
	if _, err := c.r.Peek(1); err != nil { // waits for the next frame, on the transport's deadline
		return ws.Header{}, err
	}
	c.applyDeadline() // its first byte is in: the frame's clock runs
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
		return c.readErr(err)
	}
	if h.Masked {
		ws.Unmask(p, h.Mask, 0)
	}
	switch h.Op {
	case ws.Ping:
		return c.control(ws.AppendFrame(nil, ws.Pong, p, nil))
	case ws.Close:
		if !ws.ValidClosePayload(p) {
			return c.fail(ws.CloseProtocolError, errors.New("close frame with an invalid code or reason"))
		}
		code, _ := ws.CloseCode(p)
		if code == ws.CloseNoStatus {
			code = 0 // an empty close answers an empty close (1005 never goes on the wire)
		}
		if err := c.control(ws.AppendClose(nil, code, "", nil)); err != nil {
			return err
		}
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

// control sends a control frame now, within the write timeout, or at the
// end of the message being written; a write that fails ends the
// connection with the write's reason (transport.WriteError).
func (c *wsConn) control(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.remain > 0 || c.hn > 0 {
		c.pending = frame
		return nil
	}
	if c.wtimeout > 0 {
		c.Conn.SetWriteDeadline(time.Now().Add(c.wtimeout))
		defer c.Conn.SetWriteDeadline(time.Time{})
	}
	if _, err := c.Conn.Write(frame); err != nil {
		return &transport.WriteError{Err: err}
	}
	return nil
}

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
