package rpc

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc/internal/ws"
)

// upgrade answers a WebSocket upgrade (101, subprotocol SRMP as
// wsSubprotocol says) and serves the bytes after the request as WebSocket
// frames.
func (g *gateway) upgrade(c *codec.HandlerContext, req *http.Request, end int) error {
	if err := c.WriteBytes(ws.AppendAccept(nil, req, wsSubprotocol(req))); err != nil {
		return err
	}
	g.setMode(modeWS)
	g.buf = g.buf[:copy(g.buf, g.buf[end:])]
	return g.serveWS(c)
}

// serveWS handles the whole frames held in g.buf: data frames' payloads go
// to the SRMP stage (which frames SRMP across messages), pings are
// answered, a close is echoed and ends the connection. Client frames may
// be masked or not (NewLife's v11 client does not mask).
func (g *gateway) serveWS(c *codec.HandlerContext) error {
	err := readWSFrames(c, &g.buf, g.s.cfg.Framer.MaxFrame, &g.wsFrag, func(f ws.Frame) error {
		switch f.Op {
		case ws.Ping:
			c.WriteBytes(ws.AppendFrame(nil, ws.Pong, f.Payload, nil))
		case ws.Close:
			if !ws.ValidClosePayload(f.Payload) {
				return fmt.Errorf("%w: close frame with an invalid code or reason", errBadWSFrame) // RFC 6455 §7.4: fail with 1002
			}
			code, _ := ws.CloseCode(f.Payload)
			if code == ws.CloseNoStatus {
				code = 0 // an empty close answers an empty close (1005 never goes on the wire)
			}
			c.WriteBytes(ws.AppendClose(nil, code, "", nil))
			g.ss.conn.Close()
			return errWSClosed
		}
		return nil
	})
	switch {
	case errors.Is(err, errWSClosed):
		return nil
	case errors.Is(err, errBadWSFrame):
		// Close with 1002 (1009 for a frame past MaxFrame) once the close
		// frame is written (returning the error would abort the connection
		// and drop it).
		code := ws.CloseProtocolError
		if errors.Is(err, ws.ErrTooLarge) {
			code = ws.CloseTooBig
		}
		c.WriteBytes(ws.AppendClose(nil, code, err.Error(), nil))
		g.ss.conn.Close()
		return nil
	}
	return err
}

// wsSubprotocol is the subprotocol a 101 names: SRMP, in the client's
// spelling, when the client offered it; SRMP when it offered none and is
// no browser (no Origin: NewLife's servers name SRMP to every client, and
// its clients offer none); none otherwise, since a browser fails a
// handshake whose 101 names a subprotocol it did not offer (RFC 6455
// §4.1).
func wsSubprotocol(req *http.Request) string {
	offers := req.Header.Values("Sec-WebSocket-Protocol")
	if len(offers) == 0 {
		if req.Header.Get("Origin") == "" {
			return "SRMP"
		}
		return ""
	}
	for _, v := range offers {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); strings.EqualFold(p, "SRMP") {
				return p
			}
		}
	}
	return ""
}
