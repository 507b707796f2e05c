package rpc

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gobwas/ws"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/transport"
)

// wsConn is a WebSocket connection that carries SRMP, seen as a byte
// stream, so that the transport and the SRMP framing serve it as they
// serve a raw SRMP connection (one stack: see accept.go). It is the server
// end of an upgrade (web.go) or the client end of a ws:// dial
// (wsUpgrade). Frames are read and written with github.com/gobwas/ws.
//
// Read yields the payload bytes of the peer's data messages, unmasked in
// the caller's buffer (no buffer of its own beyond the handshake's
// reader); pings are answered, a close is echoed and ends the stream
// (io.EOF), and a frame that breaks RFC 6455 is closed with 1002 (1009
// past MaxFrame). A frame or fragmented message not whole within Expire of
// its first byte ends the connection (codec.ErrFrameExpired). Write takes
// SRMP frames, whole or in pieces (the transport's batches), and sends
// each as one binary message (NewLife's WebSocket peers read one SRMP
// message per WebSocket message), masked on the client end. A peer may
// mask its frames or not (NewLife's v11 client does not).
//
// Read is called by the transport's receive goroutine only; Write by one
// writer at a time (the transport's); the control frames Read sends are
// serialized with Write by wmu.
type wsConn struct {
	net.Conn               // the upgraded connection (a *transport.HandedConn on a server)
	r        *bufio.Reader // its reader, holding what came after the handshake
	client   bool          // the client end: frames sent are masked
	maxFrame int
	expire   time.Duration // Framer.Expire: how long a frame or message may take to come whole
	wtimeout time.Duration // Transport.WriteTimeout: a control frame's write

	// Read side.
	hbuf   [ws.MaxHeaderSize - 2]byte
	left   int64 // payload bytes of the current data frame still to read
	masked bool
	mask   [4]byte
	off    int  // offset in the current frame's payload, for unmasking
	frag   bool // a fragmented message's last frame is still to come
	ctl    [ws.MaxControlFramePayloadSize]byte
	// Read deadlines: the transport's (idle, drain), and Expire after the
	// start of the unit in progress; the earlier is applied.
	deadline  time.Time
	unitSince time.Time
	unitHit   bool      // the applied deadline is the unit's
	applied   time.Time // the read deadline set on the connection last

	// Write side.
	wmu     sync.Mutex
	remain  int64 // bytes of the current SRMP frame still to write
	hdr     [8]byte
	hn      int    // bytes of a partial SRMP header in hdr
	pending []byte // a control frame to send at the next message boundary
	out     bytes.Buffer
	wmask   [4]byte // the mask of the message being written (client end)
	woff    int     // its payload offset
}

func newWSConn(c net.Conn, r *bufio.Reader, client bool, maxFrame int, expire, writeTimeout time.Duration) *wsConn {
	return &wsConn{Conn: c, r: r, client: client, maxFrame: maxFrame, expire: expire, wtimeout: writeTimeout}
}

// NetConn returns the connection under the WebSocket (its TLS state).
func (c *wsConn) NetConn() net.Conn { return c.Conn }

// errWSFrame is the cause of a WebSocket connection closed for a frame
// that breaks RFC 6455.
var errWSFrame = errors.New("rpc: bad WebSocket frame")

// SetReadDeadline implements net.Conn: the transport's deadline, applied
// unless a unit in progress must end sooner.
func (c *wsConn) SetReadDeadline(t time.Time) error {
	c.deadline = t
	return c.applyDeadline()
}

// applyDeadline sets the connection's read deadline: the transport's, or
// Expire after the start of the frame or message in progress when that is
// sooner, as a partial SRMP frame expires.
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
	if d.Equal(c.applied) {
		return nil // Read applies it at every turn: a system call only when it moves
	}
	c.applied = d
	return c.Conn.SetReadDeadline(d)
}

// readErr names a read that ended at the deadline of a unit in progress.
func (c *wsConn) readErr(err error) error {
	if c.unitHit && errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: a WebSocket frame or message not whole within %v (Framer.Expire)", codec.ErrFrameExpired, c.expire)
	}
	return err
}

// Read implements net.Conn.
func (c *wsConn) Read(b []byte) (int, error) {
	for {
		c.applyDeadline()
		if c.left > 0 {
			n, err := c.r.Read(b[:min(int64(len(b)), c.left)])
			if c.masked {
				ws.Cipher(b[:n], c.mask, c.off)
			}
			c.off += n
			c.left -= int64(n)
			return n, c.readErr(err)
		}
		if _, err := c.r.Peek(1); err != nil { // the next frame, on the transport's deadline
			return 0, err
		}
		c.applyDeadline() // its first byte is in: the frame's clock runs
		h, err := ws.ReadHeaderBuffer(c.r, c.hbuf[:])
		if err != nil {
			if errors.Is(err, ws.ErrHeaderLengthMSB) || errors.Is(err, ws.ErrHeaderLengthUnexpected) {
				return 0, c.fail(ws.StatusProtocolError, err)
			}
			return 0, c.readErr(err)
		}
		if err := c.frame(h); err != nil {
			return 0, err
		}
	}
}

// frame takes the header of the next frame: a data frame's payload is read
// by Read; a control frame is handled here.
func (c *wsConn) frame(h ws.Header) error {
	var st ws.State
	if c.frag {
		st = ws.StateFragmented
	}
	if err := ws.CheckHeader(h, st); err != nil {
		return c.fail(ws.StatusProtocolError, err)
	}
	if !h.OpCode.IsControl() {
		if h.Length > int64(c.maxFrame) {
			return c.fail(ws.StatusMessageTooBig, fmt.Errorf("%w: a frame of %d bytes, limit %d (Framer.MaxFrame)", ErrTooLarge, h.Length, c.maxFrame))
		}
		c.frag, c.left, c.masked, c.mask, c.off = !h.Fin, h.Length, h.Masked, h.Mask, 0
		return nil
	}
	p := c.ctl[:h.Length] // at most 125 bytes (CheckHeader)
	if _, err := io.ReadFull(c.r, p); err != nil {
		return c.readErr(err)
	}
	if h.Masked {
		ws.Cipher(p, h.Mask, 0)
	}
	switch h.OpCode {
	case ws.OpPing:
		return c.control(ws.OpPong, p)
	case ws.OpClose:
		if len(p) == 0 { // an empty close answers an empty close (1005 never goes on the wire)
			c.control(ws.OpClose, nil)
			return io.EOF
		}
		code, reason := ws.ParseCloseFrameData(p)
		// A peer may send the codes RFC 6455 §7.4.1 and IANA's registry
		// define (1000–1003, 1007–1014) and those for libraries and
		// applications (3000–4999); 1004, 1005, 1006 and 1015 are never sent.
		valid := code >= 1000 && code <= 1003 || code >= 1007 && code <= 1014 || code >= 3000 && code <= 4999
		if len(p) < 2 || !valid || !utf8.ValidString(reason) {
			return c.fail(ws.StatusProtocolError, errors.New("close frame with an invalid code or reason"))
		}
		c.control(ws.OpClose, ws.NewCloseFrameBody(code, ""))
		return io.EOF
	}
	return nil // a pong
}

// fail sends a close frame with code and why's text, and returns the error
// that ends the connection.
func (c *wsConn) fail(code ws.StatusCode, why error) error {
	reason := why.Error()
	if len(reason) > ws.MaxControlFramePayloadSize-2 {
		reason = reason[:ws.MaxControlFramePayloadSize-2]
	}
	c.control(ws.OpClose, ws.NewCloseFrameBody(code, reason))
	return fmt.Errorf("%w: %w", errWSFrame, why)
}

// control sends a control frame now, within the write timeout, or at the
// end of the message being written; a write that fails ends the
// connection with the write's reason (transport.WriteError).
func (c *wsConn) control(op ws.OpCode, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.out.Reset()
	c.put(payload, c.header(op, int64(len(payload))), 0)
	if c.remain > 0 || c.hn > 0 {
		c.pending = append(c.pending, c.out.Bytes()...)
		return nil
	}
	if c.wtimeout > 0 {
		c.Conn.SetWriteDeadline(time.Now().Add(c.wtimeout))
		defer c.Conn.SetWriteDeadline(time.Time{})
	}
	if _, err := c.Conn.Write(c.out.Bytes()); err != nil {
		return &transport.WriteError{Err: err}
	}
	return nil
}

// header appends to c.out the header of a whole frame of op and n payload
// bytes, and returns its mask (the client end masks its frames).
func (c *wsConn) header(op ws.OpCode, n int64) [4]byte {
	h := ws.Header{Fin: true, OpCode: op, Length: n, Masked: c.client}
	if c.client {
		h.Mask = ws.NewMask()
	}
	ws.WriteHeader(&c.out, h)
	return h.Mask
}

// put appends payload bytes p to c.out, masked with mask from offset off
// of the frame's payload on the client end.
func (c *wsConn) put(p []byte, mask [4]byte, off int) {
	start := c.out.Len()
	c.out.Write(p)
	if c.client {
		ws.Cipher(c.out.Bytes()[start:], mask, off)
	}
}

// Write implements net.Conn: b holds SRMP frames, or pieces of them, each
// sent as one binary message.
func (c *wsConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	total := len(b)
	c.out.Reset()
	for len(b) > 0 {
		if c.remain == 0 {
			b = b[c.takeHeader(b):]
			continue
		}
		n := int(min(int64(len(b)), c.remain))
		c.put(b[:n], c.wmask, c.woff)
		c.woff += n
		b = b[n:]
		if c.remain -= int64(n); c.remain == 0 {
			c.flushPending()
		}
	}
	if _, err := c.Conn.Write(c.out.Bytes()); err != nil {
		return 0, err
	}
	if c.out.Cap() > wsOutKeep {
		c.out = bytes.Buffer{}
	}
	return total, nil
}

// wsOutKeep is the largest write buffer a connection keeps between writes.
const wsOutKeep = 64 << 10

// takeHeader reads an SRMP header from the start of b (after the bytes of
// it held from an earlier write) and, once whole, starts a binary message
// that holds the whole SRMP frame: its WebSocket header, then the SRMP
// header. It returns how many bytes of b it took.
func (c *wsConn) takeHeader(b []byte) int {
	need := 4
	if c.hn >= 4 && binary.LittleEndian.Uint16(c.hdr[2:4]) == 0xFFFF {
		need = 8 // an extended length follows
	}
	k := min(need-c.hn, len(b))
	copy(c.hdr[c.hn:], b[:k])
	c.hn += k
	if c.hn < need {
		return k
	}
	if need == 4 && binary.LittleEndian.Uint16(c.hdr[2:4]) == 0xFFFF {
		return k + c.takeHeader(b[k:])
	}
	payload := int64(binary.LittleEndian.Uint16(c.hdr[2:4]))
	if need == 8 {
		payload = int64(binary.LittleEndian.Uint32(c.hdr[4:8]))
	}
	c.wmask = c.header(ws.OpBinary, int64(need)+payload)
	c.put(c.hdr[:need], c.wmask, 0)
	c.hn, c.remain, c.woff = 0, payload, need
	if payload == 0 {
		c.flushPending()
	}
	return k
}

// flushPending adds a control frame held back by the message just ended.
func (c *wsConn) flushPending() {
	if len(c.pending) > 0 {
		c.out.Write(c.pending)
		c.pending = c.pending[:0]
	}
}

// wsUpgrade is the transport.ClientConfig.Upgrade of a ws:// or wss://
// connection: the WebSocket handshake to u (subprotocol SRMP, by
// github.com/gobwas/ws), within ctx, then SRMP in WebSocket messages
// (wsConn, the client end: its frames masked).
func wsUpgrade(u *url.URL, cfg ClientConfig) func(context.Context, net.Conn) (net.Conn, error) {
	return func(ctx context.Context, c net.Conn) (net.Conn, error) {
		if d, ok := ctx.Deadline(); ok {
			c.SetDeadline(d)
			defer c.SetDeadline(time.Time{})
		}
		d := ws.Dialer{Protocols: []string{"SRMP"}}
		br, _, err := d.Upgrade(c, u)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", codec.ErrConnClosed, err)
		}
		if br == nil { // nothing came after the 101
			br = bufio.NewReaderSize(c, wsReadBuffer)
		}
		wt := cmp.Or(cfg.Transport.WriteTimeout, transport.DefaultWriteTimeout)
		return newWSConn(c, br, true, cfg.Framer.MaxFrame, cmp.Or(cfg.Framer.Expire, codec.DefaultExpire), wt), nil
	}
}

// wsReadBuffer is the size of a WebSocket client's reader: it holds frame
// headers and control frames; payloads are read into the transport's
// buffer.
const wsReadBuffer = 4 << 10

// wsServerReadBuffer is the size of a server's WebSocket reader: room for
// the headers and payloads of a few small frames, which a read of a frame
// larger than it bypasses. An idle device's connection holds it (it keeps
// its goroutine: docs/design/parking.md), so it is kept small.
const wsServerReadBuffer = 512
