// Package memnet is an in-memory network for tests: a net.Listener whose
// connections are net.Pipe pairs, dialled through the listener itself.
//
// Nothing here touches the kernel, so a server that accepts on a memnet
// Listener can run inside a testing/synctest bubble: a goroutine blocked in
// Accept, Dial, or a connection's Read or Write is durably blocked, and
// synctest.Wait, not a sleep, tells the test that every side has done all
// it can. Create the Listener inside the bubble that uses it (its channels
// belong to the bubble they are made in).
//
// The connections keep net.Pipe's semantics, which tests can rely on:
//   - Write returns only once the peer has read every byte of it, and a
//     Read returns bytes of one Write only. A test that writes a message in
//     two parts therefore knows the peer saw two separate reads, where over
//     TCP it could only make that likely.
//   - There is no buffering: while both ends write and neither reads, both
//     block. A side that may be written to while it writes must read on
//     another goroutine.
//   - Deadlines work (and follow the bubble's clock inside one).
package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// ErrRefused is returned by Dial on a closed Listener.
var ErrRefused = errors.New("memnet: connection refused (listener closed)")

// Listener is an in-memory net.Listener. Its zero value is not usable;
// make one with Listen. All methods are safe for concurrent use.
type Listener struct {
	addr  Addr
	conns chan net.Conn // unbuffered: a Dial waits for its Accept
	done  chan struct{}
	once  sync.Once
	dials atomic.Uint64 // numbers the client ends' addresses
}

// Listen returns a listener whose address is name.
func Listen(name string) *Listener {
	return &Listener{addr: Addr(name), conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept waits for a Dial and returns the server end of the new
// connection, or net.ErrClosed once the listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("memnet: accept on %s: %w", l.addr, net.ErrClosed)
	}
}

// Close stops the listener: pending and later Accepts return
// net.ErrClosed, Dials ErrRefused. Connections already made stay open.
// Closing twice is harmless.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr returns the listener's address, the name given to Listen.
func (l *Listener) Addr() net.Addr { return l.addr }

// Dial connects to the listener and returns the client end once Accept has
// taken the server end, like a dial that completes when the server
// accepts. It returns ErrRefused if the listener is or gets closed first,
// and ctx's error if ctx ends first.
//
// The client end's local address is the listener's name with "#n"
// appended, n counting the listener's dials from 1; the server end reports
// it as its remote address.
func (l *Listener) Dial(ctx context.Context) (net.Conn, error) {
	select { // a closed listener refuses even when ctx is already done
	case <-l.done:
		return nil, ErrRefused
	default:
	}
	me := Addr(fmt.Sprintf("%s#%d", l.addr, l.dials.Add(1)))
	client, server := net.Pipe()
	select {
	case l.conns <- &conn{Conn: server, local: l.addr, remote: me}:
		return &conn{Conn: client, local: me, remote: l.addr}, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, ErrRefused
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

// Addr is the address of a memnet endpoint: its network is "memnet".
type Addr string

// Network returns "memnet".
func (Addr) Network() string { return "memnet" }

func (a Addr) String() string { return string(a) }

// conn is one end of a net.Pipe with the addresses of its connection
// (net.Pipe's own are both "pipe").
type conn struct {
	net.Conn
	local, remote Addr
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }
