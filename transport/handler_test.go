package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// logHandler is a SessionHandler that records what happens to its session
// (its methods run on the session's receive goroutine, one at a time) and
// optionally echoes what it receives.
type logHandler struct {
	id       int
	echo     bool
	log      []string
	received chan string                // each Receive's bytes, if not nil
	closed   chan *transport.CloseError // Closed's error, if not nil
	ended    chan []string              // the whole log, sent by Closed, if not nil
}

func (h *logHandler) Receive(s *transport.Session, p *packet.Packet) {
	h.log = append(h.log, "receive "+string(p.Bytes()))
	if h.echo {
		s.SendBytes(p.Bytes())
	}
	if h.received != nil {
		h.received <- string(p.Bytes())
	}
}

func (h *logHandler) Closed(s *transport.Session, err *transport.CloseError) {
	h.log = append(h.log, "closed "+err.Reason.String())
	if h.closed != nil {
		h.closed <- err
	}
	if h.ended != nil {
		h.ended <- append([]string(nil), h.log...)
	}
}

// handlerHooks makes a logHandler per session (numbered from 1), stored in
// the session's bag so that OnOpen can prove it ran after NewHandler.
func handlerHooks(echo bool, ended chan []string) (transport.Hooks, *atomic.Int32) {
	var made atomic.Int32
	return transport.Hooks{
		NewHandler: func(s *transport.Session) transport.SessionHandler {
			h := &logHandler{id: int(made.Add(1)), echo: echo, ended: ended, log: []string{"new"}}
			s.Set("handler", h)
			return h
		},
		OnOpen: func(s *transport.Session) {
			if h, ok := s.Get("handler"); ok {
				h.(*logHandler).log = append(h.(*logHandler).log, "open")
			}
		},
	}, &made
}

func equalLogs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Each accepted TCP connection gets a handler of its own: NewHandler, then
// OnOpen, then Receive for its reads and Closed when it ends.
func TestNewHandlerServerTCP(t *testing.T) {
	leakcheck.Check(t)
	ended := make(chan []string, 2)
	hooks, made := handlerHooks(true, ended)
	srv, a := startServer(t, transport.Config{}, hooks, "tcp", "127.0.0.1:0")
	c1, c2 := dial(t, "tcp", a), dial(t, "tcp", a)
	for i, c := range []net.Conn{c1, c2} {
		msg := fmt.Sprintf("conn%d", i+1)
		c.Write([]byte(msg))
		got := make([]byte, len(msg))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
			t.Fatalf("echo on connection %d: %q, %v", i+1, got, err)
		}
	}
	if n := made.Load(); n != 2 {
		t.Fatalf("NewHandler ran %d times for 2 connections", n)
	}
	c1.Close()
	if log := <-ended; !equalLogs(log, []string{"new", "open", "receive conn1", "closed peer closed"}) {
		t.Fatalf("first session: %q", log)
	}
	c2.Close()
	if log := <-ended; !equalLogs(log, []string{"new", "open", "receive conn2", "closed peer closed"}) {
		t.Fatalf("second session: %q", log)
	}
	waitUntil(t, "no sessions", func() bool { return srv.SessionCount() == 0 })
}

// Each UDP peer gets a handler of its own, ended by its empty datagram.
func TestNewHandlerServerUDP(t *testing.T) {
	leakcheck.Check(t)
	ended := make(chan []string, 2)
	hooks, made := handlerHooks(true, ended)
	_, a := startServer(t, transport.Config{}, hooks, "udp", "127.0.0.1:0")
	for i := range 2 {
		c := dialClient(t, "udp", a, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
		msg := fmt.Sprintf("peer%d", i+1)
		c.SendBytes([]byte(msg))
		if got := receiveString(t, c, len(msg)); got != msg {
			t.Fatalf("peer %d echo %q", i+1, got)
		}
		c.Close() // the empty datagram ends the peer's session
		if log := <-ended; !equalLogs(log, []string{"new", "open", "receive " + msg, "closed peer closed"}) {
			t.Fatalf("peer %d: %q", i+1, log)
		}
	}
	if n := made.Load(); n != 2 {
		t.Fatalf("NewHandler ran %d times for 2 peers", n)
	}
}

// A server's handler that panics closes its session with a PanicError,
// reported to Closed.
func TestNewHandlerPanicClosesSession(t *testing.T) {
	leakcheck.Check(t)
	closed := make(chan *transport.CloseError, 1)
	_, a := startServer(t, transport.Config{}, transport.Hooks{
		NewHandler: func(*transport.Session) transport.SessionHandler {
			return panicHandler{closed}
		},
		BatchSends: true,
	}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.Write([]byte("x"))
	e := <-closed
	var pe *transport.PanicError
	if e.Reason != transport.ReasonError || !errors.As(e, &pe) || pe.Value != "boom" {
		t.Fatalf("close %v", e)
	}
}

type panicHandler struct{ closed chan *transport.CloseError }

func (panicHandler) Receive(*transport.Session, *packet.Packet) { panic("boom") }
func (h panicHandler) Closed(_ *transport.Session, e *transport.CloseError) {
	h.closed <- e
}

// A client in event mode has its handler (and OnOpen's work) in place when
// Dial returns; the handler receives the replies and hears the close.
func TestNewHandlerClientEventMode(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	var (
		h     *logHandler
		order []string
	)
	c, err := transport.Dial(context.Background(), "tcp", a.String(), transport.ClientConfig{}, transport.Hooks{
		NewHandler: func(s *transport.Session) transport.SessionHandler {
			order = append(order, "new")
			h = &logHandler{received: make(chan string, 4), closed: make(chan *transport.CloseError, 2)}
			return h
		},
		OnOpen: func(s *transport.Session) { order = append(order, "open") },
	})
	if err != nil {
		t.Fatal(err)
	}
	// NewHandler and OnOpen ran on this goroutine, before Dial returned.
	if h == nil || !equalLogs(order, []string{"new", "open"}) {
		t.Fatalf("after Dial: handler %v, hooks ran %q", h != nil, order)
	}
	c.SendBytes([]byte("event"))
	if got := <-h.received; got != "event" {
		t.Fatalf("handler received %q", got)
	}
	c.Close()
	closedOnceLocally(t, h)
	if len(h.closed) != 0 {
		t.Fatal("Closed ran twice")
	}
}

// closedOnceLocally checks that h's Closed ran, with ReasonLocal, before
// the client's Close returned.
func closedOnceLocally(t *testing.T, h *logHandler) {
	t.Helper()
	select {
	case e := <-h.closed:
		if e.Reason != transport.ReasonLocal {
			t.Fatalf("Closed with %v", e.Reason)
		}
	default:
		t.Fatal("Close returned before the handler's Closed ran")
	}
}

// In sync and pull modes the caller receives; the handler is made (before
// Dial returns) and hears the close, but receives nothing.
func TestNewHandlerClientSyncAndPullModes(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	for _, mode := range []transport.ReceiveMode{transport.ReceiveSync, transport.ReceivePull} {
		t.Run(map[transport.ReceiveMode]string{transport.ReceiveSync: "sync", transport.ReceivePull: "pull"}[mode], func(t *testing.T) {
			var h *logHandler
			opened := false
			c, err := transport.Dial(context.Background(), "tcp", a.String(), transport.ClientConfig{Mode: mode}, transport.Hooks{
				NewHandler: func(s *transport.Session) transport.SessionHandler {
					h = &logHandler{closed: make(chan *transport.CloseError, 2)}
					return h
				},
				OnOpen: func(*transport.Session) { opened = h != nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			if h == nil || !opened {
				t.Fatalf("after Dial: handler %v, OnOpen after it %v", h != nil, opened)
			}
			c.SendBytes([]byte("mode"))
			if got := receiveString(t, c, 4); got != "mode" {
				t.Fatalf("Receive = %q", got)
			}
			c.Close()
			closedOnceLocally(t, h)
			if len(h.closed) != 0 || !equalLogs(h.log, []string{"closed local close"}) {
				t.Fatalf("handler saw %q", h.log)
			}
		})
	}
}

// NewHandler replaces OnReceive and OnClose: setting both is refused, by
// servers and clients alike, before anything starts.
func TestNewHandlerWithOnReceiveOrOnCloseRefused(t *testing.T) {
	leakcheck.Check(t)
	newHandler := func(*transport.Session) transport.SessionHandler { return &logHandler{} }
	for name, hooks := range map[string]transport.Hooks{
		"OnReceive": {NewHandler: newHandler, OnReceive: func(*transport.Session, *packet.Packet) {}},
		"OnClose":   {NewHandler: newHandler, OnClose: func(*transport.Session, *transport.CloseError) {}},
		"both": {NewHandler: newHandler, OnReceive: func(*transport.Session, *packet.Packet) {},
			OnClose: func(*transport.Session, *transport.CloseError) {}},
	} {
		if srv, err := transport.NewServer(transport.Config{}, hooks); !errors.Is(err, transport.ErrHooks) || srv != nil {
			t.Errorf("NewServer with NewHandler and %s: %v", name, err)
		}
		for _, mode := range []transport.ReceiveMode{transport.ReceiveEvent, transport.ReceivePull, transport.ReceiveSync} {
			c, err := transport.Dial(context.Background(), "tcp", "127.0.0.1:1", transport.ClientConfig{Mode: mode}, hooks)
			if !errors.Is(err, transport.ErrHooks) || c != nil {
				t.Errorf("Dial (mode %d) with NewHandler and %s: %v", mode, name, err)
			}
		}
	}
	// NewHandler with OnOpen, OnError and BatchSends is fine.
	srv, err := transport.NewServer(transport.Config{}, transport.Hooks{NewHandler: newHandler,
		OnOpen: func(*transport.Session) {}, OnError: func(error) {}, BatchSends: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
}

// failingListener fails its first Accept with err, then blocks until it
// is closed.
type failingListener struct {
	err    error
	failed atomic.Bool
	done   chan struct{}
	once   sync.Once
}

func (l *failingListener) Accept() (net.Conn, error) {
	if !l.failed.Swap(true) {
		return nil, l.err
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *failingListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *failingListener) Addr() net.Addr { return memnet.Addr("failing") }

// A failed Accept is reported to OnError; the server goes on accepting.
func TestOnErrorReportsAcceptFailure(t *testing.T) {
	leakcheck.Check(t)
	errs := make(chan error, 4)
	srv, err := transport.NewServer(transport.Config{}, transport.Hooks{OnError: func(err error) { errs <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	boom := errors.New("accept: too many open files")
	l := &failingListener{err: boom, done: make(chan struct{})}
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; !errors.Is(err, boom) {
		t.Fatalf("OnError got %v, want %v", err, boom)
	}
	srv.Close() // closes l: the loop ends without another report
	if len(errs) != 0 {
		t.Fatalf("OnError got %v after the one failure", <-errs)
	}
}

// failingPacketConn fails its first read with err, then reads from the
// in-memory network.
type failingPacketConn struct {
	*memPacketConn
	err    error
	failed atomic.Bool
}

func (c *failingPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	if !c.failed.Swap(true) {
		return 0, nil, c.err
	}
	return c.memPacketConn.ReadFrom(b)
}

// A failed datagram read is reported to OnError; the socket stays in
// service.
func TestOnErrorReportsPacketReadFailure(t *testing.T) {
	leakcheck.Check(t)
	errs := make(chan error, 4)
	hooks, _ := handlerHooks(true, nil)
	hooks.OnError = func(err error) { errs <- err }
	srv, err := transport.NewServer(transport.Config{}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	mem := newMemNet()
	boom := errors.New("read: connection refused (ICMP)")
	if err := srv.ServePacket(&failingPacketConn{memPacketConn: mem.listen("server"), err: boom}); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; !errors.Is(err, boom) {
		t.Fatalf("OnError got %v, want %v", err, boom)
	}
	peer := mem.listen("peer")
	defer peer.Close()
	peer.WriteTo([]byte("still there"), memAddr("server"))
	if got := readDatagram(t, peer); got != "still there" {
		t.Fatalf("echo after the read error: %q", got)
	}
	srv.Close()
	if len(errs) != 0 {
		t.Fatalf("OnError got %v after the one failure", <-errs)
	}
}
