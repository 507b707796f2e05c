package rpc

import (
	"bytes"
	"sync/atomic"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/rpc/internal/ws"
)

// The gateway is the first stage of a server connection's pipeline: it
// decides from the connection's first bytes which of the port's three
// protocols the connection speaks (NewLife ApiNetServer), then
//   - SRMP: gets out of the way for good (codec.Prelude), so frames are cut
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
type gateway struct {
	s    *Server
	ss   *Session
	mode atomic.Int32
	buf  []byte // bytes held while detecting, or of an HTTP request or WebSocket frame in progress
}

const (
	modeDetect int32 = iota
	modeSRMP
	modeHTTP
	modeWS
	modeClosing // an answer that ends the connection was written: the rest is ignored
)

var httpMethods = [...]string{"GET ", "POST ", "PUT ", "DELETE ", "HEAD ", "OPTIONS ", "PATCH "}

func newGateway(s *Server) codec.Handler { return &gateway{s: s} }

// Passing implements codec.Prelude.
func (g *gateway) Passing() bool { return g.mode.Load() == modeSRMP }

// Read implements codec.Handler; msg is the transport's borrowed bytes.
func (g *gateway) Read(c *codec.Context, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireRead(msg)
	}
	switch g.mode.Load() {
	case modeSRMP:
		return c.FireRead(p)
	case modeHTTP:
		g.buf = p.AppendTo(g.buf)
		return g.serveHTTP(c)
	case modeWS:
		g.buf = p.AppendTo(g.buf)
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
func (g *gateway) enter(c *codec.Context, m int32, p *packet.Packet) error {
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
	case modeSRMP, modeWS:
		g.ss.proto.Store(protoSRMP)
	case modeHTTP:
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
func (g *gateway) Write(c *codec.Context, msg any) error {
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

// Close implements codec.Closer.
func (g *gateway) Close(*codec.Context, error) { g.buf = nil }
