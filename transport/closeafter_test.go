package transport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// A handler that answers and then ends the conversation with
// CloseAfterWrites: the answer (batched until the handler returns) reaches
// the peer before the end of the stream; Close would drop it.
func TestCloseAfterWritesDeliversQueuedSends(t *testing.T) {
	leakcheck.Check(t)
	reasons := make(chan transport.Reason, 1)
	srv, err := transport.NewServer(transport.Config{}, transport.Hooks{
		BatchSends: true,
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			s.SendBytes([]byte("bye:"), p.Bytes())
			s.CloseAfterWrites()
		},
		OnClose: func(_ *transport.Session, e *transport.CloseError) { reasons <- e.Reason },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addr, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if string(got) != "bye:x" {
		t.Errorf("read %q before the end, want \"bye:x\"", got)
	}
	if r := <-reasons; r != transport.ReasonLocal {
		t.Errorf("reason %v, want ReasonLocal", r)
	}
}

// A ReceiveSync client has no receive loop to carry out the drain:
// CloseAfterWrites must still write what was sent and then end the
// session, so the server sees the bytes and then the end of the stream,
// the client's session is finished (Done, OnClose) and its next Receive
// reports the close (ReasonLocal).
func TestCloseAfterWritesEndsASyncClient(t *testing.T) {
	leakcheck.Check(t)
	got := make(chan []byte, 1)
	var seen []byte
	_, a := startServer(t, transport.Config{}, transport.Hooks{
		OnReceive: func(_ *transport.Session, p *packet.Packet) { seen = p.AppendTo(seen) },
		OnClose:   func(*transport.Session, *transport.CloseError) { got <- seen },
	}, "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
	if err := c.SendBytes([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	if err := c.Session().CloseAfterWrites(); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if string(b) != "last words" {
			t.Errorf("the server read %q before the end, want \"last words\"", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's session did not end within 5 s of CloseAfterWrites")
	}
	select {
	case <-c.Session().Done(): // finished (OnClose run) without a Receive or Close to do it
	case <-time.After(5 * time.Second):
		t.Fatal("the client's session was not finished within 5 s of CloseAfterWrites")
	}
	if r := c.Session().Reason(); r != transport.ReasonLocal {
		t.Errorf("the client's session ended with %v, want ReasonLocal", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Receive(ctx)
	var ce *transport.CloseError
	if !errors.As(err, &ce) || ce.Reason != transport.ReasonLocal {
		t.Errorf("Receive after CloseAfterWrites: %v, want a *CloseError with ReasonLocal", err)
	}
}
