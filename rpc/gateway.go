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
// packet). The first bytes are HTTP only when they are a request line:
// a method, a space, a target and " HTTP/1.x" then CRLF. While they could
// still become one, the gateway waits for more, but never past one whole
// SRMP frame: an SRMP request that happens to start like "GET " is served
// as SRMP as soon as its frame is complete.
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

// detectLimit bounds how far the gateway looks for a request line.
const detectLimit = 8 << 10

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
// returns modeDetect while more bytes are needed.
func (g *gateway) detect(b []byte) int32 {
	if g.s.cfg.NoHTTP && g.s.cfg.NoWebSocket {
		return modeSRMP
	}
	method := false
	for _, m := range httpMethods {
		n := min(len(b), len(m))
		if string(b[:n]) == m[:n] {
			if n < len(m) {
				return g.unlessFrame(b, modeDetect)
			}
			method = true
			break
		}
	}
	if !method {
		return modeSRMP
	}
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		if len(b) >= detectLimit {
			return modeSRMP
		}
		return g.unlessFrame(b, modeDetect)
	}
	line := b[:i]
	if bytes.HasSuffix(line, []byte(" HTTP/1.1")) || bytes.HasSuffix(line, []byte(" HTTP/1.0")) {
		return modeHTTP
	}
	return modeSRMP
}

// unlessFrame returns SRMP when b already holds a whole SRMP frame, else m.
func (g *gateway) unlessFrame(b []byte, m int32) int32 {
	if n, err := (codec.SRMPSplitter{}).FrameLen(b, g.s.cfg.Framer.MaxFrame); err == nil && n > 0 && n <= len(b) {
		return modeSRMP
	}
	return m
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
