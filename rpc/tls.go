package rpc

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"sync"
)

// tlsStates holds the TLS state of a server's connections from the end of
// their handshake until their session takes it, keyed by the connection's
// remote address (the same net.Addr value the session reports). The
// transport does the handshake and keeps the *tls.Conn; the server learns
// the state through the config's VerifyConnection (see serverTLS).
type tlsStates struct{ m sync.Map }

// serverTLS returns base, cloned, with a GetConfigForClient that gives each
// connection a config whose VerifyConnection keeps the handshake's state
// in st (after the application's own GetConfigForClient and
// VerifyConnection, which still decide). nil for nil.
func serverTLS(base *tls.Config, st *tlsStates) *tls.Config {
	if base == nil {
		return nil
	}
	out := base.Clone()
	out.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := base
		if base.GetConfigForClient != nil {
			c, err := base.GetConfigForClient(hello)
			if err != nil {
				return nil, err
			}
			if c != nil {
				cfg = c
			}
		}
		per := cfg.Clone()
		per.GetConfigForClient = nil
		addr := hello.Conn.RemoteAddr()
		verify := cfg.VerifyConnection
		per.VerifyConnection = func(cs tls.ConnectionState) error {
			if verify != nil {
				if err := verify(cs); err != nil {
					return err
				}
			}
			if addr != nil {
				st.m.Store(addr, &cs)
			}
			return nil
		}
		return per, nil
	}
	return out
}

// TLS returns the TLS state of the session's connection (its version, the
// peer's certificates and, when the server verified them, their chains to
// its Config.Transport.TLS ClientCAs: what an interceptor authorizes a
// client certificate by), or nil for a connection without TLS. A session
// that speaks TLS has its state before its first call.
func (s *Session) TLS() *tls.ConnectionState {
	if cs := s.tlsState.Load(); cs != nil {
		return cs
	}
	if s.srv.cfg.Transport.TLS == nil {
		return nil
	}
	addr := s.RemoteAddr()
	if addr == nil {
		return nil
	}
	v, ok := s.srv.tlsStates.m.LoadAndDelete(addr)
	if !ok {
		return nil
	}
	cs := v.(*tls.ConnectionState)
	s.tlsState.CompareAndSwap(nil, cs)
	return s.tlsState.Load()
}

// forgetTLS drops the state of a session's connection that never asked
// for it.
func (s *Session) forgetTLS() {
	if s.srv.cfg.Transport.TLS != nil && s.tlsState.Load() == nil {
		if addr := s.RemoteAddr(); addr != nil {
			s.srv.tlsStates.m.Delete(addr)
		}
	}
}

// clientTLS is the TLS config a client dials a tls:// or wss:// address
// (or an https:// one) with: Transport.TLS, or the system's roots, with
// the address's host as the server name when the config names none.
func clientTLS(base *tls.Config, u *url.URL) *tls.Config {
	if base != nil && (base.ServerName != "" || base.InsecureSkipVerify) {
		return base
	}
	var c *tls.Config
	if base == nil {
		c = &tls.Config{}
	} else {
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
