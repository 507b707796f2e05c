package codec

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// A server's connection holds no request matcher (320 bytes) until it
// sends a request of its own: an idle device connection pays for none.
// Its first request makes one and is answered; once the connection has
// ended, a request fails at once with ErrConnClosed.
func TestServerConnMakesItsMatcherWithItsFirstRequest(t *testing.T) {
	leakcheck.Check(t)
	pipe := NewPipeline(SRMPFraming(FramerConfig{}))
	conns := make(chan *Conn, 1)
	served := make(chan struct{}, 1)
	srv, err := NewServer(transport.Config{}, Options{
		Pipeline: pipe,
		OnOpen:   func(c *Conn) { conns <- c },
		Handler: func(c *Conn, msg any) {
			if m := msg.(*Message); m.Kind == KindRequest {
				c.ReplyBytes(m, m.PayloadBytes())
				served <- struct{}{}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := Dial(ctx, "tcp", a.String(), transport.ClientConfig{}, Options{
		Pipeline: pipe,
		Handler: func(c *Conn, msg any) { // the client answers the server's requests
			if m := msg.(*Message); m.Kind == KindRequest {
				c.ReplyBytes(m, []byte("pong"))
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if r, err := client.Conn().RequestBytes(ctx, FlagString, []byte("hi")); err != nil {
		t.Fatal(err)
	} else {
		r.Release()
	}
	sc := <-conns
	<-served
	if sc.m.Load() != nil {
		t.Fatal("a server connection that answered a request but sent none holds a matcher")
	}

	r, err := sc.RequestBytes(ctx, FlagString, []byte("ping"))
	if err != nil {
		t.Fatalf("the server's first request: %v", err)
	}
	if got := string(r.PayloadBytes()); got != "pong" {
		t.Fatalf("the server's request got %q", got)
	}
	r.Release()
	if sc.m.Load() == nil {
		t.Fatal("no matcher after the server's request")
	}

	client.Close()
	<-sc.Session().Done()
	start := time.Now()
	if _, err := sc.RequestBytes(ctx, FlagString, []byte("late")); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("a request after the end: %v, want ErrConnClosed", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("a request after the end took %v to fail", d)
	}

	// A connection that never sent a request: its end takes the shared
	// closed matcher (it allocates none), so a request after it fails at
	// once too.
	quiet, err := Dial(ctx, "tcp", a.String(), transport.ClientConfig{}, Options{Pipeline: pipe})
	if err != nil {
		t.Fatal(err)
	}
	qc := <-conns
	quiet.Close()
	<-qc.Session().Done()
	if qc.m.Load() != closedRequests {
		t.Fatal("the end of a connection that never asked did not take the shared closed matcher")
	}
	if _, err := qc.RequestBytes(ctx, FlagString, []byte("late")); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("a request after the end of a connection that never asked: %v, want ErrConnClosed", err)
	}
}
