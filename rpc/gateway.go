package rpc

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/rpc/internal/ws"
)

// The gateway is the first stage of a server connection's pipeline: it
// decides from the connection's first bytes which of the port's three
// protocols the connection speaks (NewLife ApiNetServer), then
//   - SRMP: gets out of the way for good ([codec.Detector]), so frames are cut
//     as if it were not there;
//   - HTTP: answers requests itself (http.go);
//   - WebSocket (an HTTP upgrade): unwraps the SRMP bytes of inbound
//     messages for the SRMP stage and wraps outbound ones (websocket.go).
//
// Detection looks at the start of the connection only, never again, so a
// binary SRMP stream is never taken for HTTP later (NewLife probes every
// packet). The first bytes are HTTP when they are a request line: a
// method, a space, a target and " HTTP/1.x" then CRLF. While they could
// still become one, the gateway waits for more, up to MaxHTTPHeader (a
// longer line gets 431). An SRMP request that happens to start like
// "GET " is told apart by its binary bytes (the data block's length has a
// zero byte), which no request line holds.
//
// The bytes the gateway holds of an incomplete unit (the first bytes while
// detecting, an HTTP request, a WebSocket frame) are in no codec framer,
// so the gateway expires them itself, as the codec does a partial frame:
// a connection whose unit is not complete Framer.Expire after its first
// byte ends with codec.ErrFrameExpired.
type gateway struct {
	s  *Server
	ss *Session
	// mu serializes the reading goroutine's Read with an HTTP call's own
	// goroutine, which answers its call and then serves what was read
	// meanwhile; it guards what follows it.
	mu        sync.Mutex
	pending   bool // an HTTP call runs on its own goroutine: what comes is held, not served
	httpUnit  int  // the size of the HTTP request buf starts with, once its head is read; 0: not known
	mode      atomic.Int32
	buf       []byte       // bytes held while detecting, or of an HTTP request or WebSocket frame in progress
	continued bool         // 100 Continue went out for the HTTP request in buf
	wsFrag    bool         // WebSocket: a fragmented message's last frame is still to come
	since     atomic.Int64 // mono instant the incomplete unit in buf began; 0: none
	timer     *time.Timer  // expires it (made on the first one; the reading goroutine's)
}

// keepBuf is the largest buffer an empty gateway keeps for its next unit:
// a connection that once sent a large request does not hold its size.
const keepBuf = 64 << 10

const (
	modeDetect int32 = iota
	modeSRMP
	modeHTTP
	modeWS
	modeClosing // an answer that ends the connection was written: the rest is ignored
)

var httpMethods = [...]string{"GET ", "POST ", "PUT ", "DELETE ", "HEAD ", "OPTIONS ", "PATCH "}

func newGateway(s *Server) codec.Handler { return &gateway{s: s} }

// Transparent implements [codec.Detector].
func (g *gateway) Transparent() bool { return g.mode.Load() == modeSRMP }

// Read implements codec.Handler; msg is the transport's borrowed bytes.
func (g *gateway) Read(c *codec.HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireRead(msg)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	in := len(g.buf) + p.Total()
	since := g.since.Swap(0) // a unit this read completes is served, not held: no clock runs while it is
	err := g.read(c, p)
	if err == nil {
		err = g.hold(c)
	}
	g.track(c, since, len(g.buf) < in)
	return err
}

// hold counts the buffer of the incomplete unit held, if any, against the
// server's MaxPartialBytes (codec.HandlerContext.Hold), as the framers
// count their partial frames: a connection whose unit does not fit ends
// with codec.ErrMemoryCap. The whole buffer counts, not only its bytes:
// it is what the unit costs. Called with g.mu held.
func (g *gateway) hold(c *codec.HandlerContext) error {
	n := 0
	if len(g.buf) > 0 {
		n = cap(g.buf)
	}
	if err := c.Hold(n); err != nil {
		g.buf = nil
		return err
	}
	return nil
}

// appendRead appends p to g.buf, which holds the start of a unit (an
// HTTP request, a WebSocket frame): once the unit's size is known, the
// buffer grows towards it as its bytes come (growTowards), not by
// append's doubling, nor to the whole declared size at once.
func (g *gateway) appendRead(p *packet.Packet) {
	if size := g.unitSize(); size > 0 {
		g.buf = growTowards(g.buf, size, len(g.buf)+p.Total())
	}
	g.buf = p.AppendTo(g.buf)
}

// unitSize is the size of the unit g.buf starts with, when its head has
// been read: an HTTP request's head and body (httpUnit, set by serveHTTP),
// a WebSocket frame's header and payload; 0 when not known.
func (g *gateway) unitSize() int {
	switch g.mode.Load() {
	case modeHTTP:
		return g.httpUnit
	case modeWS:
		if h, hn, err := ws.ParseHeader(g.buf); err == nil && hn > 0 {
			return hn + int(h.Length)
		}
	}
	return 0
}

// minGrow is the least growTowards grows a buffer by.
const minGrow = 64 << 10

// growTowards returns b with room for need bytes, and towards a unit of
// size bytes: at most twice what has come and minGrow more, never past
// size (unless need is), the capacity exact. So a declared length with
// nothing behind it holds next to nothing of MaxPartialBytes (a hundred-
// byte head declaring 10 MB reserved it all, and a few dozen such
// connections filled the server's cap); a unit that comes is copied a
// few times, and holds about its size when whole. size is bounded by the
// caller (MaxHTTPHeader + MaxFrame, or a frame's header + MaxFrame).
func growTowards(b []byte, size, need int) []byte {
	want := max(min(size, 2*len(b)+minGrow), need)
	if want <= cap(b) {
		return b
	}
	nb := make([]byte, len(b), want)
	copy(nb, b)
	return nb
}

// errHeldTooLarge ends a connection that sends more than a request's worth
// of bytes while its HTTP call runs.
var errHeldTooLarge = errors.New("rpc: too many bytes sent while an HTTP call runs")

// read handles p by the connection's mode.
func (g *gateway) read(c *codec.HandlerContext, p *packet.Packet) error {
	switch g.mode.Load() {
	case modeSRMP:
		return c.FireRead(p)
	case modeHTTP:
		g.appendRead(p)
		if g.pending { // held until the call in progress is answered
			if len(g.buf) > g.s.cfg.MaxHTTPHeader+g.s.cfg.Framer.MaxFrame {
				g.buf = nil
				c.Conn().Session().Abort(errHeldTooLarge)
			}
			return nil
		}
		return g.serveHTTP(c)
	case modeWS:
		g.appendRead(p)
		return g.serveWS(c)
	case modeClosing:
		return nil
	}
	if g.ss == nil {
		g.ss, _ = c.Conn().State().(*Session)
	}
	if c.Conn().Session().Datagram() {
		g.setMode(modeSRMP)
		return c.FireRead(p)
	}
	if len(g.buf) == 0 {
		if m := g.detect(p.Bytes()); m != modeDetect && p.Next() == nil {
			return g.enter(c, m, p)
		}
	}
	g.buf = p.AppendTo(g.buf)
	switch m := g.detect(g.buf); m {
	case modeDetect:
		return nil
	default:
		held := packet.Wrap(g.buf)
		g.buf = nil
		err := g.enter(c, m, held)
		held.Release()
		return err
	}
}

// enter switches to mode m and hands it the bytes read so far (borrowed).
func (g *gateway) enter(c *codec.HandlerContext, m int32, p *packet.Packet) error {
	g.setMode(m)
	if m == modeSRMP {
		return c.FireRead(p)
	}
	g.buf = p.AppendTo(g.buf[:0])
	return g.serveHTTP(c)
}

// setMode switches the connection to mode m and tells its session what it
// now speaks (where pushes may go): in that order, so that a push sent
// once the session says SRMP meets a Write that wraps it for WebSocket.
func (g *gateway) setMode(m int32) {
	g.mode.Store(m)
	switch m {
	case modeSRMP:
		g.ss.wire.CompareAndSwap(0, uint32(ProtoSRMP)) // (a UDP peer's is set)
		g.ss.proto.Store(protoSRMP)
	case modeWS:
		g.ss.wire.Store(uint32(ProtoWebSocket))
		g.ss.proto.Store(protoSRMP)
	case modeHTTP:
		g.ss.wire.Store(uint32(ProtoHTTP))
		g.ss.proto.Store(protoHTTP)
	}
}

// detect decides the protocol of a connection that starts with b, or
// returns modeDetect while more bytes are needed. Its decision depends only
// on the bytes up to the point where it makes it, so any split of the same
// bytes into reads decides alike. Bytes that start with a method and a
// space stay candidates for HTTP until a byte no request line holds (a
// control byte: binary, so SRMP) or the line's end; a line longer than
// MaxHTTPHeader is HTTP, which answers it with 431.
func (g *gateway) detect(b []byte) int32 {
	if g.s.cfg.NoHTTP && g.s.cfg.NoWebSocket {
		return modeSRMP
	}
	switch n := methodLen(b); {
	case n < 0:
		return modeSRMP
	case n == 0:
		return modeDetect
	}
	limit := g.s.cfg.MaxHTTPHeader
	for i, c := range b[:min(len(b), limit)] {
		switch {
		case c == '\r' && i+1 == len(b):
			return modeDetect // the line may end with the next byte
		case c == '\r' && b[i+1] == '\n':
			if bytes.HasSuffix(b[:i], []byte(" HTTP/1.1")) || bytes.HasSuffix(b[:i], []byte(" HTTP/1.0")) {
				return modeHTTP
			}
			return modeSRMP
		case c < ' ' && c != '\t' || c == 0x7F:
			return modeSRMP
		}
	}
	if len(b) > limit {
		return modeHTTP
	}
	return modeDetect
}

// methodLen returns the length of the HTTP method and space b starts with,
// 0 while b is a prefix of one, or -1 when it starts with none.
func methodLen(b []byte) int {
	for _, m := range httpMethods {
		n := min(len(b), len(m))
		if string(b[:n]) == m[:n] {
			if n < len(m) {
				return 0
			}
			return n
		}
	}
	return -1
}

// Write implements codec.Handler: on a WebSocket connection each outbound
// SRMP frame leaves as one binary message; otherwise bytes pass.
func (g *gateway) Write(c *codec.HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok || g.mode.Load() != modeWS {
		return c.FireWrite(msg)
	}
	var hdr [14]byte
	h := ws.AppendHeader(hdr[:0], ws.Binary, true, p.Total(), nil)
	var err error
	if p.Next() == nil {
		err = c.WriteBytes(h, p.Bytes())
	} else {
		err = c.WriteBytes(h, p.AppendTo(nil))
	}
	p.Release()
	return err
}

// track sets the clock of the incomplete unit the gateway holds after a
// read, which Read stopped while the read was handled (since is its start
// before the read). It starts anew when the read completed a unit (what is
// left is the next one's, timed from now, when reading resumes) and goes
// on from since when it did not; it stays stopped when nothing is held.
// progress says whether the read consumed held bytes.
func (g *gateway) track(c *codec.HandlerContext, since int64, progress bool) {
	expire := g.s.cfg.Framer.Expire
	switch {
	case g.pending: // what is held while an HTTP call runs is no unit in progress: no clock
	case len(g.buf) == 0 || expire < 0:
		if cap(g.buf) > keepBuf {
			g.buf = nil
		}
	case progress || since == 0:
		g.since.Store(mono.Now()) // before the timer is set: when it fires, the age is at least expire
		if g.timer == nil {
			g.timer = time.AfterFunc(expire, func() { g.expire(c, expire) })
		} else {
			g.timer.Reset(expire)
		}
	default: // the same unit, still incomplete: its timer may have fired while the clock was stopped
		g.since.Store(since)
		g.timer.Reset(time.Duration(since + int64(expire) - mono.Now()))
	}
}

// expire ends the connection if the unit held when the timer was set is
// still incomplete (runs on the timer's goroutine; a newer unit has set
// the timer again).
//
// While replies to this peer are still unwritten, the unit is not timed
// out: the reading goroutine may be held in their write (the peer reads
// them slowly), so the rest of the unit may sit unread in the socket, and
// a peer that does not read is the send guards' (SendStallTimeout,
// WriteTimeout), not this one's. The timer is set again instead.
func (g *gateway) expire(c *codec.HandlerContext, expire time.Duration) {
	since := g.since.Load()
	if since == 0 || time.Duration(mono.Now()-since) < expire {
		return
	}
	sess := c.Conn().Session()
	if sess.SendQueue().Bytes > 0 {
		g.mu.Lock()
		if g.since.CompareAndSwap(since, mono.Now()) && g.timer != nil {
			g.timer.Reset(expire)
		}
		g.mu.Unlock()
		return
	}
	sess.Abort(codec.ErrFrameExpired)
}

// Closed implements [codec.CloseHandler].
func (g *gateway) Closed(*codec.HandlerContext, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.buf = nil
	g.since.Store(0)
	if g.timer != nil {
		g.timer.Stop()
	}
}

// The gateway is a pipeline stage that detects its protocol and frees its
// partial state when the connection ends.
var (
	_ codec.Detector     = (*gateway)(nil)
	_ codec.CloseHandler = (*gateway)(nil)
)
