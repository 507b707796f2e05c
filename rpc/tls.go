package rpc

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
)

// TLS returns the TLS state of the session's connection (its version, the
// peer's certificates and, when the server verified them, their chains to
// its Config.Transport.TLS ClientCAs: what an interceptor authorizes a
// client certificate by), or nil for a connection without TLS. A session
// that speaks TLS has its state before its first call.
func (s *Session) TLS() *tls.ConnectionState {
	if cs := s.tlsState.Load(); cs != nil {
		return cs
	}
	var c net.Conn
	if s.web != nil {
		c = s.web.conn
	} else {
		c = s.conn.Session().Conn() // nil for a UDP peer
	}
	for c != nil {
		if tc, ok := c.(*tls.Conn); ok {
			cs := tc.ConnectionState()
			s.tlsState.CompareAndSwap(nil, &cs)
			return s.tlsState.Load()
		}
		u, ok := c.(interface{ NetConn() net.Conn }) // a hand-off, a WebSocket: the connection under it
		if !ok {
			return nil
		}
		c = u.NetConn()
	}
	return nil
}

// clientTLS is the TLS config a client dials a tls:// or wss:// address
// (or an https:// one) with: Transport.TLS, or the system's roots, with
// the address's host as the server name when the config names none.
func clientTLS(base *tls.Config, u *url.URL) *tls.Config {
	if base != nil && (base.ServerName != "" || base.InsecureSkipVerify) {
		return base
	}
	c := &tls.Config{}
	if base != nil {
		c = base.Clone()
	}
	c.ServerName = u.Hostname()
	return c
}

// webClient is the HTTP client of http:// and https:// servers: with
// Transport.TLS set, a transport of its own that uses it (an https://
// server's certificate is checked against its RootCAs; its Certificates
// are the client's for mutual TLS).
func webClient(cfg ClientConfig) (c *http.Client, own bool) {
	c = &http.Client{} // no Timeout of its own: each call's context has the client's (invokeHTTP)
	if cfg.Transport.TLS == nil {
		return c, false
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg.Transport.TLS.Clone()
	c.Transport = t
	return c, true
}
