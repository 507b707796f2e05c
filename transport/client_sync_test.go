package transport_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
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
