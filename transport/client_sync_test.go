package transport_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// ReceiveSync reads on the caller's goroutine: round trips over TCP, Unix
// and UDP, small reads copied and large ones handed over whole.
func TestClientSyncRoundTrips(t *testing.T) {
	leakcheck.Check(t)
	for _, tc := range []struct{ network, addr string }{
		{"tcp", "127.0.0.1:0"}, {"unix", t.TempDir() + "/s.sock"}, {"udp", "127.0.0.1:0"},
	} {
		t.Run(tc.network, func(t *testing.T) {
			_, a := startServer(t, transport.Config{}, echoHooks(), tc.network, tc.addr)
			c := dialClient(t, tc.network, a, transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
			if c.Packets() != nil {
				t.Fatal("sync mode has a Packets channel")
			}
			for i := range 100 {
				msg := []byte{byte(i), 'x', 'y'}
				c.SendBytes(msg)
				if got := receiveString(t, c, len(msg)); got != string(msg) {
					t.Fatalf("round trip %d: %q", i, got)
				}
			}
			big := bytes.Repeat([]byte("0123456789"), 3000) // past CopyThreshold
			c.SendBytes(big)
			if got := receiveString(t, c, len(big)); got != string(big) {
				t.Fatalf("large message: %d bytes back, mismatch", len(got))
			}
			if st := c.Stats(); st.BytesIn != uint64(100*3+len(big)) {
				t.Fatalf("BytesIn %d", st.BytesIn)
			}
		})
	}
}

// A blocked sync Receive returns when its context is cancelled or its
// deadline passes; the connection stays usable for the next call, also
// when the same (already armed) context is passed again.
func TestClientSyncContext(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := c.Receive(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Receive: %v", err)
	}
	if _, err := c.Receive(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Receive with a done context: %v", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancelShort()
	if _, err := c.Receive(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive past its deadline: %v", err)
	}

	live, cancelLive := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelLive()
	for i := range 3 { // the same armed context, call after call
		c.SendBytes([]byte("ok"))
		p, err := c.Receive(live)
		if err != nil || string(p.Bytes()) != "ok" {
			t.Fatalf("call %d after interrupts: %v", i, err)
		}
		p.Release()
	}
}

// The end of the connection surfaces at the next Receive, with its reason,
// and OnClose runs once; Close interrupts a blocked Receive.
func TestClientSyncEnd(t *testing.T) {
	leakcheck.Check(t)
	srv, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	closes := make(chan transport.Reason, 2)
	hooks := transport.Hooks{OnClose: func(_ *transport.Session, e *transport.CloseError) { closes <- e.Reason }}
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, hooks)
	waitUntil(t, "the server session", func() bool { return srv.SessionCount() == 1 })
	srv.Range(func(s *transport.Session) bool { s.Close(); return true })
	_, err := c.Receive(context.Background())
	var ce *transport.CloseError
	if !errors.As(err, &ce) || ce.Reason != transport.ReasonPeerClosed || !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Receive after the server closed: %v", err)
	}
	if _, err := c.Receive(context.Background()); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("second Receive: %v", err)
	}
	c.Close()
	if r := <-closes; r != transport.ReasonPeerClosed || len(closes) != 0 {
		t.Fatalf("OnClose: %v, %d more", r, len(closes))
	}

	c2 := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, hooks)
	errc := make(chan error, 1)
	go func() { _, err := c2.Receive(context.Background()); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	c2.Close()
	if err := <-errc; !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Receive interrupted by Close: %v", err)
	}
	if r := <-closes; r != transport.ReasonLocal {
		t.Fatalf("OnClose after Close: %v", r)
	}
}

func TestClientSyncRejectsReconnect(t *testing.T) {
	_, err := transport.Dial(context.Background(), "tcp", "127.0.0.1:1",
		transport.ClientConfig{Mode: transport.ReceiveSync, AutoReconnect: true}, transport.Hooks{})
	if err == nil {
		t.Fatal("ReceiveSync with AutoReconnect accepted")
	}
}

// Wake cuts a blocked sync Receive short with ErrWoken (or the next one
// when none is blocked) and loses nothing: the connection stays open and
// the data that comes later is read whole.
func TestClientSyncWake(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
	ctx := context.Background()

	time.AfterFunc(50*time.Millisecond, c.Wake)
	if _, err := c.Receive(ctx); !errors.Is(err, transport.ErrWoken) {
		t.Fatalf("woken Receive: %v", err)
	}
	c.Wake() // nobody reading: the next call returns at once
	if _, err := c.Receive(ctx); !errors.Is(err, transport.ErrWoken) {
		t.Fatalf("Receive after an idle Wake: %v", err)
	}
	for i := range 20 { // wakes racing with replies: every byte still arrives once
		c.SendBytes([]byte("ping"))
		if i%2 == 0 {
			go c.Wake()
		}
		var got []byte
		for len(got) < 4 {
			p, err := c.Receive(ctx)
			if errors.Is(err, transport.ErrWoken) {
				continue
			}
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			got = append(got, p.Bytes()...)
			p.Release()
		}
		if string(got) != "ping" {
			t.Fatalf("round %d: %q", i, got)
		}
	}
	if r := c.Session().Reason(); r != transport.ReasonNone {
		t.Fatalf("a wake closed the connection: %v", r)
	}

	pull := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
	pull.Wake() // no sync reader: nothing happens
	pull.SendBytes([]byte("x"))
	if got := receiveString(t, pull, 1); got != "x" {
		t.Fatalf("pull client after Wake: %q", got)
	}
}

// StartReceiving hands a sync client to a receive goroutine: a Receive
// blocked at the time returns, bytes already waiting in the socket and
// those that come later reach OnReceive whole and in order, the sync
// receives fail or find nothing, a Wake no longer cuts reads, and the
// server's close is noticed with nobody calling (OnClose once, also
// through the Close that follows).
func TestClientSyncStartReceiving(t *testing.T) {
	leakcheck.Check(t)
	srv, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	got := make(chan string, 16)
	closes := make(chan transport.Reason, 2)
	hooks := transport.Hooks{
		OnReceive: func(_ *transport.Session, p *packet.Packet) { got <- string(p.Bytes()) },
		OnClose:   func(_ *transport.Session, e *transport.CloseError) { closes <- e.Reason },
	}
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, hooks)
	c.SendBytes([]byte("sync"))
	if s := receiveString(t, c, 4); s != "sync" {
		t.Fatalf("sync round trip: %q", s)
	}
	blocked := make(chan error, 1)
	go func() {
		p, err := c.Receive(context.Background())
		if err == nil {
			p.Release()
		}
		blocked <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.SendBytes([]byte("early")) // may wait in the socket, or be read by the blocked Receive
	time.Sleep(20 * time.Millisecond)
	if err := c.StartReceiving(); err != nil {
		t.Fatalf("StartReceiving: %v", err)
	}
	var echoed string
	select {
	case err := <-blocked:
		if err == nil {
			echoed = "early"
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Receive blocked across StartReceiving did not return")
	}
	if err := c.StartReceiving(); err != nil {
		t.Fatalf("StartReceiving again: %v", err)
	}
	if _, err := c.Receive(context.Background()); err == nil {
		t.Fatal("Receive after StartReceiving succeeded")
	}
	if p, err := c.ReceiveBuffered(); p != nil || err != nil {
		t.Fatalf("ReceiveBuffered after StartReceiving: %v, %v", p, err)
	}
	c.Wake() // would cut the goroutine's read and end the session, were it still armed
	c.SendBytes([]byte("late"))
	want := "late"
	if echoed == "" {
		want = "early" + want
	}
	var all string
	for len(all) < len(want) {
		select {
		case s := <-got:
			all += s
		case <-time.After(5 * time.Second):
			t.Fatalf("OnReceive after StartReceiving: %q, want %q", all, want)
		}
	}
	if all != want || c.Session().Reason() != transport.ReasonNone {
		t.Fatalf("OnReceive after StartReceiving: %q, want %q; reason %v", all, want, c.Session().Reason())
	}
	srv.Range(func(s *transport.Session) bool { s.Close(); return true })
	select {
	case r := <-closes:
		if r != transport.ReasonPeerClosed {
			t.Fatalf("OnClose: %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's close went unnoticed by the receive goroutine")
	}
	c.Close()
	if len(closes) != 0 {
		t.Fatalf("OnClose ran again: %v", <-closes)
	}
}

// StartReceiving on a client that ended or was closed starts nothing: it
// fails with the close error, and the session finishes once.
func TestClientSyncStartReceivingAfterTheEnd(t *testing.T) {
	leakcheck.Check(t)
	srv, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	closes := make(chan transport.Reason, 2)
	hooks := transport.Hooks{OnClose: func(_ *transport.Session, e *transport.CloseError) { closes <- e.Reason }}
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, hooks)
	waitUntil(t, "the server session", func() bool { return srv.SessionCount() == 1 })
	c.Session().Close() // ended, and nobody has read since
	if err := c.StartReceiving(); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("StartReceiving on an ended session: %v", err)
	}
	if r := <-closes; r != transport.ReasonLocal {
		t.Fatalf("OnClose: %v", r)
	}
	c.Close()
	if len(closes) != 0 {
		t.Fatalf("OnClose ran again: %v", <-closes)
	}

	c2 := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, hooks)
	c2.Close()
	if err := c2.StartReceiving(); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("StartReceiving after Close: %v", err)
	}
	if r := <-closes; r != transport.ReasonLocal || len(closes) != 0 {
		t.Fatalf("OnClose after Close: %v, %d more", r, len(closes))
	}

	ev := dialClient(t, "tcp", a, transport.ClientConfig{}, transport.Hooks{})
	if err := ev.StartReceiving(); err != nil {
		t.Fatalf("StartReceiving in event mode: %v", err)
	}
}

// A loop of Receives with a context that never ends arms nothing, call
// after call; a context with a deadline after it still bounds its
// Receive, a Wake still cuts one short, and the loop goes on after both.
func TestClientSyncContextAfterAQuietLoop(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
	quiet := func(round string) {
		for i := range 3 {
			c.SendBytes([]byte("ok"))
			p, err := c.Receive(context.Background())
			if err != nil || string(p.Bytes()) != "ok" {
				t.Fatalf("%s, call %d: %v", round, i, err)
			}
			p.Release()
		}
	}
	quiet("first loop")
	short, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := c.Receive(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive past its deadline after a quiet loop: %v", err)
	}
	quiet("after the deadline")
	time.AfterFunc(30*time.Millisecond, c.Wake)
	if _, err := c.Receive(context.Background()); !errors.Is(err, transport.ErrWoken) {
		t.Fatalf("woken Receive after a quiet loop: %v", err)
	}
	quiet("after the wake")
}
