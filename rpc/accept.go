package rpc

import (
	"bytes"

	"github.com/lifenet/lifenet/transport"
)

// A server's port speaks SRMP, HTTP and WebSocket (NewLife ApiNetServer).
// Each stream connection's first bytes choose its stack, once, for the
// connection's life (as rpcx's cmux and Kitex's detection do), before any
// handler sees them:
//   - SRMP: the transport and the SRMP framing serve it (server.go);
//   - HTTP: it is handed off to net/http (web.go), which serves its
//     requests and upgrades a WebSocket request to SRMP in WebSocket
//     messages, served again by the SRMP stack (wsconn.go).
//
// UDP datagrams are SRMP. With Config.Transport.TLS every connection is
// TLS and its first bytes after the handshake decide.

// httpMethods are the methods whose request line hands a connection to
// net/http.
var httpMethods = [...]string{"GET ", "POST ", "PUT ", "DELETE ", "HEAD ", "OPTIONS ", "PATCH "}

// routeConn decides a connection's stack from its first bytes (see
// transport.Hooks.Route). The bytes are HTTP when they are a request line:
// a method, a space, a target and " HTTP/1.x" then CRLF. While they could
// still become one, more are read, up to MaxHTTPHeader or a full receive
// buffer (a longer line goes to net/http, which answers 431). An SRMP frame that happens to start
// like "GET " is told apart by its binary bytes (the data block's length
// has a zero byte), which no request line holds. The decision depends only
// on the bytes up to the point where it is made, so any split of the same
// bytes into reads decides alike.
func (s *Server) routeConn(b []byte, full bool) transport.Route {
	switch n := methodLen(b); {
	case n < 0:
		return transport.RouteServe
	case n == 0:
		return transport.RouteMore
	}
	limit := s.cfg.MaxHTTPHeader
	for i, c := range b[:min(len(b), limit)] {
		switch {
		case c == '\r' && i+1 == len(b):
			return transport.RouteMore // the line may end with the next byte
		case c == '\r' && b[i+1] == '\n':
			if bytes.HasSuffix(b[:i], []byte(" HTTP/1.1")) || bytes.HasSuffix(b[:i], []byte(" HTTP/1.0")) {
				return transport.RouteHandOff
			}
			return transport.RouteServe
		case c < ' ' && c != '\t' || c == 0x7F:
			return transport.RouteServe
		}
	}
	if len(b) > limit || full {
		return transport.RouteHandOff // a request line too long: net/http answers 431
	}
	return transport.RouteMore
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
