package transport_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// testExchange records an exchange: the stale bytes it was handed, and
// when Send ran.
type testExchange struct {
	c       *transport.Client
	stale   []string
	sent    int
	sendErr error
	staleAt []int // sent, at each Stale
	request string
	onSend  func() // after the send
	onStale func() // after each Stale
}

func (x *testExchange) Stale(p *packet.Packet) {
	x.stale = append(x.stale, string(p.Bytes()))
	x.staleAt = append(x.staleAt, x.sent)
	if x.onStale != nil {
		x.onStale()
	}
}

func (x *testExchange) Send() error {
	x.sent++
	if x.sendErr != nil {
		return x.sendErr
	}
	err := x.c.SendBytes([]byte(x.request))
	if x.onSend != nil {
		x.onSend()
	}
	return err
}

// An exchange hands what arrived before it to Stale, then sends, then
// returns the answer to what it sent, and nothing of the stale bytes.
func TestExchangeHandsStaleBytesOverBeforeItSends(t *testing.T) {
	leakcheck.Check(t)
	c, peer := syncClientAndPeer(t)
	peer.Write([]byte("unasked")) // on loopback the bytes are in c's socket once Write returns
	answered := make(chan error, 1)
	go func() {
		buf := make([]byte, 4)
		if _, err := io.ReadFull(peer, buf); err != nil {
			answered <- err
			return
		}
		_, err := peer.Write(append([]byte("re:"), buf...))
		answered <- err
	}()
	x := &testExchange{c: c, request: "ping"}
	p, err := c.Exchange(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Bytes()) != "re:ping" {
		t.Fatalf("the answer: %q, want %q", p.Bytes(), "re:ping")
	}
	if len(x.stale) != 1 || x.stale[0] != "unasked" || x.staleAt[0] != 0 || x.sent != 1 {
		t.Fatalf("stale %q (sends before each: %v), %d sends; want \"unasked\" before the one send", x.stale, x.staleAt, x.sent)
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	// Nothing stale the second time: Stale is not called.
	go func() {
		buf := make([]byte, 4)
		io.ReadFull(peer, buf)
		peer.Write(append([]byte("re:"), buf...))
	}()
	x = &testExchange{c: c, request: "pong"}
	if p, err = c.Exchange(context.Background(), x); err != nil || string(p.Bytes()) != "re:pong" || len(x.stale) != 0 || x.sent != 1 {
		t.Fatalf("second exchange: %v, %v, stale %q, %d sends", p, err, x.stale, x.sent)
	}
}

// A failed send ends the exchange with the send's error, and nothing is
// read for it; an exchange on a closed client sends nothing.
func TestExchangeEndsAtAFailedSend(t *testing.T) {
	leakcheck.Check(t)
	c, _ := syncClientAndPeer(t)
	boom := errors.New("boom")
	x := &testExchange{c: c, sendErr: boom}
	if _, err := c.Exchange(context.Background(), x); !errors.Is(err, boom) || x.sent != 1 {
		t.Fatalf("a failed send: %v after %d sends, want boom after 1", err, x.sent)
	}
	c.Close()
	x = &testExchange{c: c, request: "late"}
	if _, err := c.Exchange(context.Background(), x); err == nil || x.sent != 0 {
		t.Fatalf("on a closed client: %v after %d sends, want an error and no send", err, x.sent)
	}
}

// A context that ends while the exchange waits for the answer ends it
// with the context's error, after the send.
func TestExchangeWaitEndsWithItsContext(t *testing.T) {
	leakcheck.Check(t)
	c, _ := syncClientAndPeer(t)
	ctx, cancel := context.WithCancel(context.Background())
	x := &testExchange{c: c, request: "never answered", onSend: cancel}
	if _, err := c.Exchange(ctx, x); !errors.Is(err, context.Canceled) || x.sent != 1 {
		t.Fatalf("%v after %d sends, want context.Canceled after 1", err, x.sent)
	}
}

// A session ended from inside the exchange (a pipeline that rejects the
// stale bytes, a send that fails) ends the exchange with the session's
// close error: the close does not wait for the read the callback runs in.
func TestExchangeEndsWhenItsCallbacksCloseTheSession(t *testing.T) {
	leakcheck.Check(t)
	bad := errors.New("bad bytes")
	t.Run("stale", func(t *testing.T) {
		c, peer := syncClientAndPeer(t)
		peer.Write([]byte("not a protocol"))
		x := &testExchange{c: c, request: "ping", onStale: func() { c.Session().Abort(bad) }}
		_, err := c.Exchange(context.Background(), x)
		var ce *transport.CloseError
		if !errors.As(err, &ce) || !errors.Is(err, bad) || x.sent != 0 {
			t.Fatalf("%v after %d sends, want the close error naming the abort, no send", err, x.sent)
		}
	})
	t.Run("send", func(t *testing.T) {
		c, _ := syncClientAndPeer(t)
		x := &testExchange{c: c, request: "ping", onSend: func() { c.Session().Abort(bad) }}
		_, err := c.Exchange(context.Background(), x)
		if !errors.Is(err, bad) || x.sent != 1 {
			t.Fatalf("%v after %d sends, want the close error naming the abort after 1", err, x.sent)
		}
	})
}

// A panic in a callback reaches Exchange's caller and leaves the client
// usable: its next exchange runs, and Close returns.
func TestExchangeSurvivesAPanickingCallback(t *testing.T) {
	leakcheck.Check(t)
	c, peer := syncClientAndPeer(t)
	peer.Write([]byte("unasked"))
	x := &testExchange{c: c, request: "ping", onStale: func() { panic("stale") }}
	func() {
		defer func() {
			if v := recover(); v != "stale" {
				t.Fatalf("recovered %v, want the callback's panic", v)
			}
		}()
		c.Exchange(context.Background(), x)
	}()
	go func() {
		buf := make([]byte, 4)
		io.ReadFull(peer, buf)
		peer.Write(append([]byte("re:"), buf...))
	}()
	x = &testExchange{c: c, request: "pong"}
	if p, err := c.Exchange(context.Background(), x); err != nil || string(p.Bytes()) != "re:pong" {
		t.Fatalf("after the panic: %v, %v", p, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
