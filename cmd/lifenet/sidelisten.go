package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A side port is an HTTP listener the CLI starts beside the port it serves
// (today the metrics port of `lifenet serve --metrics`). It shares the
// process's file limit with that port, so a side port that held every
// connection offered to it took the RPC port down: its connections held
// the descriptors the RPC port's accepts needed (issue 45). A side port
// therefore holds at most a few connections ([capListener]), each for a
// bounded time (the timeouts below), and answers GET and HEAD only
// (net/http's method patterns: any other method is a 405 naming them in
// Allow).

// defaultSideConns is a side port's connection cap by default: a few
// scrapers and people, far below any file limit.
const defaultSideConns = 64

// maxSideConns bounds --metrics-conns; [sideConnsLimit] bounds it further
// by the file limit.
const maxSideConns = 4096

// A side port's timeouts and header limit: a scrape sends a small request
// and reads a response of a few hundred KiB at most.
const (
	sideReadHeaderTimeout = 5 * time.Second  // a connection's request header, the first one from its accept
	sideReadTimeout       = 10 * time.Second // a request, header and body
	sideWriteTimeout      = 30 * time.Second // a response, from the end of its request's header
	sideIdleTimeout       = 30 * time.Second // a keep-alive connection between requests
	sideMaxHeaderBytes    = 16 << 10
)

// sideConnsLimit is the most connections a side port may hold with the
// given file limit (RLIMIT_NOFILE; 0: none known): a quarter of it, at
// least one, so that the port it serves beside keeps the rest.
func sideConnsLimit(fileLimit uint64) int {
	if fileLimit == 0 || fileLimit/4 >= maxSideConns {
		return maxSideConns
	}
	return max(1, int(fileLimit/4))
}

// newSideServer returns an http.Server for a side port: handler behind the
// timeouts above, on a [capListener] over l holding at most maxConns
// connections. The caller serves the returned listener
// (hs.Serve(cl)) and shuts hs down; hs.Shutdown closes the listener.
func newSideServer(l net.Listener, maxConns int, handler http.Handler) (*http.Server, *capListener) {
	cl := newCapListener(l, maxConns)
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: sideReadHeaderTimeout,
		ReadTimeout:       sideReadTimeout,
		WriteTimeout:      sideWriteTimeout,
		IdleTimeout:       sideIdleTimeout,
		MaxHeaderBytes:    sideMaxHeaderBytes,
		ConnState:         cl.connState,
	}
	return hs, cl
}

// capListener is a net.Listener that holds at most max connections at
// once: golang.org/x/net/netutil.LimitListener's bound, except that a
// connection past it is not left waiting in the kernel's backlog (whose
// peers see a connect succeed and then hang) but accepted and refused at
// once. When full, a new connection takes the place of the connection idle
// longest between requests (an http.Server keep-alive connection, told by
// [capListener.connState]), so held keep-alive connections cannot lock a
// scraper out; with none idle it is refused: a 503 written to its empty
// send buffer, then closed. So the listener holds at most max descriptors,
// and one more for the moment of a refusal.
//
// Accept is for one goroutine (http.Server's loop); Close, the counters,
// connState and the connections' Close are safe for concurrent use.
type capListener struct {
	net.Listener
	max  int
	busy string // the refusal: a whole HTTP/1.1 response

	mu   sync.Mutex
	open map[*capConn]struct{}

	refused atomic.Uint64 // connections refused at once, the cap reached and none idle
	evicted atomic.Uint64 // idle connections closed for a new one
}

func newCapListener(l net.Listener, max int) *capListener {
	body := fmt.Sprintf("lifenet: this port holds at most %d connections; try again\n", max)
	return &capListener{
		Listener: l, max: max, open: make(map[*capConn]struct{}, max),
		busy: "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\n" +
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
	}
}

// capConn is a connection a [capListener] holds; its Close gives the place
// back.
type capConn struct {
	net.Conn
	l         *capListener
	idleSince time.Time // guarded by l.mu; zero unless idle between requests
}

// Accept returns the next connection the cap admits, refusing the others
// as they come; its error is the underlying listener's.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if cc := l.admit(c); cc != nil {
			return cc, nil
		}
		l.refuse(c)
	}
}

// admit takes c in if there is a place, or one idle connection's, and
// returns it; nil when c is to be refused.
func (l *capListener) admit(c net.Conn) *capConn {
	l.mu.Lock()
	var victim *capConn
	if len(l.open) >= l.max {
		for o := range l.open {
			if !o.idleSince.IsZero() && (victim == nil || o.idleSince.Before(victim.idleSince)) {
				victim = o
			}
		}
		if victim == nil {
			l.mu.Unlock()
			return nil
		}
		delete(l.open, victim)
	}
	cc := &capConn{Conn: c, l: l}
	l.open[cc] = struct{}{}
	l.mu.Unlock()
	if victim != nil {
		// As http.Server closes its idle connections at Shutdown: a request
		// that was arriving meanwhile is lost, and HTTP clients resend an
		// idempotent request whose reused connection closed.
		l.evicted.Add(1)
		victim.Conn.Close()
	}
	return cc
}

// refuse answers c with the 503 and closes it. The write goes to a fresh
// connection's empty send buffer: it does not wait for the peer.
func (l *capListener) refuse(c net.Conn) {
	l.refused.Add(1)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(c, l.busy)
	c.Close()
}

// connState is the http.Server's ConnState hook: it marks the connections
// idle between requests, the ones a new connection may take the place of.
func (l *capListener) connState(c net.Conn, s http.ConnState) {
	cc, ok := c.(*capConn)
	if !ok {
		return
	}
	l.mu.Lock()
	if s == http.StateIdle {
		cc.idleSince = time.Now()
	} else {
		cc.idleSince = time.Time{}
	}
	l.mu.Unlock()
}

// conns returns how many connections l holds.
func (l *capListener) conns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// Close closes the connection and gives its place back; a second Close
// (the http.Server's, after an eviction) only returns the error.
func (c *capConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.open, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
