package codec_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
)

// holdStage stands for a stage that buffers incomplete units of its own (a
// gateway's partial HTTP request): a connection whose first byte is 'H'
// has every byte it sends kept by the stage and declared with Hold; any
// other connection's bytes pass on to the next stage.
type holdStage struct {
	decided, holding bool
	held             int
}

func (s *holdStage) Read(c *codec.HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireRead(msg)
	}
	if !s.decided && p.Len() > 0 {
		s.decided, s.holding = true, p.Bytes()[0] == 'H'
	}
	if !s.holding {
		return c.FireRead(msg)
	}
	if err := c.Hold(s.held + p.Len()); err != nil {
		return err
	}
	s.held += p.Len()
	return nil
}

func (s *holdStage) Write(c *codec.HandlerContext, msg any) error { return c.FireWrite(msg) }

// holdServer serves a pipeline of a holdStage before a 4-byte length
// field, under a cap of limit bytes; the errors its connections end with
// arrive on the channel.
func holdServer(t *testing.T, limit int64) (*codec.Server, string, chan error) {
	t.Helper()
	ended := make(chan error, 8)
	srv, addr := serve(t, "tcp", codec.Options{
		Pipeline: codec.NewPipeline(func() codec.Handler { return &holdStage{} },
			codec.LengthFieldFraming(codec.LengthField{Size: 4}, codec.FramerConfig{})),
		Handler:         func(c *codec.Conn, msg any) { c.Write(msg) },
		MaxPartialBytes: limit,
		OnClose:         func(_ *codec.Conn, err error) { ended <- err },
	})
	return srv, addr, ended
}

// dialRaw connects a plain TCP client that sends b; it is closed when the
// test ends.
func dialRaw(t *testing.T, addr string, b []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	return c
}

func held(n int) []byte { return append([]byte{'H'}, bytes.Repeat([]byte{'x'}, n-1)...) }

// noEnd fails the test if a connection has ended.
func noEnd(t *testing.T, ended chan error, what string) {
	t.Helper()
	select {
	case err := <-ended:
		t.Fatalf("%s: a connection ended with %v", what, err)
	default:
	}
}

// What stages hold of their own counts against MaxPartialBytes like a
// framer's partial frame: the connection whose stage would pass the cap
// ends with ErrMemoryCap, the others keep what they hold, and when they
// close everything comes back without the stage giving it back itself.
func TestStageHoldsShareTheMemoryCap(t *testing.T) {
	leakcheck.Check(t)
	srv, addr, ended := holdServer(t, 1000)
	first := dialRaw(t, addr, held(600))
	testwait.For(t, 5*time.Second, "the first stage's hold of 600 bytes counted", func() bool { return srv.PartialBytes() == 600 })
	dialRaw(t, addr, held(600))
	if err := testwait.Recv(t, ended, 5*time.Second, "the second connection's end"); !errors.Is(err, codec.ErrMemoryCap) {
		t.Fatalf("the second connection ended with %v, want ErrMemoryCap", err)
	}
	if got := srv.PartialBytes(); got != 600 {
		t.Fatalf("PartialBytes %d after the refused hold, want the first connection's 600", got)
	}
	noEnd(t, ended, "after the refused hold")
	first.Close()
	testwait.Recv(t, ended, 5*time.Second, "the first connection's end")
	testwait.For(t, 5*time.Second, "the holds given back after the close", func() bool { return srv.PartialBytes() == 0 })
}

// A framer's partial frame and a stage's hold take from the same cap, in
// either order.
func TestStageHoldAndPartialFrameShareTheCap(t *testing.T) {
	leakcheck.Check(t)
	srv, addr, ended := holdServer(t, 8000)
	// A 1 MiB frame announced with 600 bytes of it: the framer keeps a
	// first buffer of 4 KiB (its keepFirst) for it.
	frame := append([]byte{0x00, 0x00, 0x10, 0x00}, make([]byte, 600)...)
	dialRaw(t, addr, frame)
	testwait.For(t, 5*time.Second, "the partial frame counted", func() bool { return srv.PartialBytes() == 4096 })
	dialRaw(t, addr, held(5000)) // 4096 + 5000 > 8000
	if err := testwait.Recv(t, ended, 5*time.Second, "the holding connection's end"); !errors.Is(err, codec.ErrMemoryCap) {
		t.Fatalf("a stage's hold past a partial frame's share ended with %v, want ErrMemoryCap", err)
	}
	dialRaw(t, addr, held(3000)) // fits: 7096
	testwait.For(t, 5*time.Second, "a hold that fits beside the partial frame", func() bool { return srv.PartialBytes() == 7096 })
	dialRaw(t, addr, frame) // a second partial frame's 4 KiB does not fit
	if err := testwait.Recv(t, ended, 5*time.Second, "the second partial frame's connection"); !errors.Is(err, codec.ErrMemoryCap) {
		t.Fatalf("a partial frame past a stage's hold ended with %v, want ErrMemoryCap", err)
	}
	noEnd(t, ended, "after the refused frame")
	if got := srv.PartialBytes(); got != 7096 {
		t.Fatalf("PartialBytes %d, want 7096", got)
	}
}

// ctxStage calls f with its context on every read and passes the message on.
type ctxStage struct{ f func(c *codec.HandlerContext) }

func (s ctxStage) Read(c *codec.HandlerContext, msg any) error {
	s.f(c)
	return c.FireRead(msg)
}

func (s ctxStage) Write(c *codec.HandlerContext, msg any) error { return c.FireWrite(msg) }

// A stage's Hold on a server with a cap: an increase that does not fit
// reports ErrMemoryCap and keeps the previous hold, a decrease gives back
// the difference, a negative n is 0, and after the connection ends a Hold
// counts nothing.
func TestHoldKeepsThePreviousHoldWhenRefused(t *testing.T) {
	leakcheck.Check(t)
	type step struct {
		n       int
		refused bool
		want    int64
	}
	steps := []step{{300, false, 300}, {1001, true, 300}, {1000, false, 1000}, {200, false, 200}, {-5, false, 0}, {0, false, 0}}
	got := make(chan error, len(steps))
	var ctx *codec.HandlerContext
	var srv *codec.Server
	var addr string
	srv, addr = serve(t, "tcp", codec.Options{
		Pipeline: codec.NewPipeline(func() codec.Handler {
			return ctxStage{func(c *codec.HandlerContext) {
				ctx = c
				for _, s := range steps {
					err := c.Hold(s.n)
					if (err != nil) != s.refused || err != nil && !errors.Is(err, codec.ErrMemoryCap) {
						got <- errors.Join(errors.New("unexpected Hold result"), err)
						return
					}
					if p := srv.PartialBytes(); p != s.want {
						got <- errors.New("PartialBytes off")
						t.Errorf("Hold(%d): PartialBytes %d, want %d", s.n, p, s.want)
						return
					}
				}
				c.Hold(700)
				got <- nil
			}}
		}, codec.LengthFieldFraming(codec.LengthField{Size: 4}, codec.FramerConfig{})),
		Handler:         func(c *codec.Conn, msg any) {},
		MaxPartialBytes: 1000,
	})
	conn := dialRaw(t, addr, []byte{1, 0, 0, 0, 'x'})
	if err := testwait.Recv(t, got, 5*time.Second, "the stage's holds"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	testwait.For(t, 5*time.Second, "the hold of 700 given back at the end", func() bool { return srv.PartialBytes() == 0 })
	if err := ctx.Hold(500); err != nil || srv.PartialBytes() != 0 {
		t.Fatalf("a Hold after the end: %v, PartialBytes %d; want nil and 0", err, srv.PartialBytes())
	}
}

// Without a cap — a client's connection, a server whose MaxPartialBytes is
// negative, a chain built by NewChain — Hold always succeeds.
func TestHoldWithoutACapSucceeds(t *testing.T) {
	leakcheck.Check(t)
	huge := int(1 << 40)
	holdErr := make(chan error, 4)
	holding := func() codec.Handler {
		return ctxStage{func(c *codec.HandlerContext) { holdErr <- c.Hold(huge) }}
	}
	pipe := codec.NewPipeline(holding, codec.SRMPFraming(codec.FramerConfig{}))
	srv, addr := serve(t, "tcp", codec.Options{Pipeline: pipe, Handler: echoSRMP, MaxPartialBytes: -1})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: pipe})
	r, err := c.Request(context.Background(), request("ping"))
	if got := replyText(t, r, err); got != "ping" {
		t.Fatalf("reply %q", got)
	}
	for _, side := range []string{"server", "client"} {
		if err := testwait.Recv(t, holdErr, 5*time.Second, side+"'s hold"); err != nil {
			t.Errorf("Hold on the %s without a cap: %v", side, err)
		}
	}
	if got := srv.PartialBytes(); got != 0 {
		t.Errorf("PartialBytes %d on a server without a cap, want 0", got)
	}
	var sent []*packet.Packet
	ch := codec.NewPipeline(holding).NewChain(senderFunc(func(p *packet.Packet) error { sent = append(sent, p); return nil }), func(any) error { return nil })
	p := payload([]byte("x"))
	defer p.Release()
	if err := ch.Read(p); err != nil {
		t.Fatal(err)
	}
	if err := <-holdErr; err != nil {
		t.Errorf("Hold on a chain from NewChain: %v", err)
	}
	ch.Close(nil)
}

type senderFunc func(p *packet.Packet) error

func (f senderFunc) Send(p *packet.Packet) error { return f(p) }
