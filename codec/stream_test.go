package codec_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// streamServer answers a request "n" with n replies "0"…"n-1" with the
// request's sequence, then an empty reply.
func streamServer(t *testing.T) string {
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		var n int
		fmt.Sscan(string(m.PayloadBytes()), &n)
		for i := range n {
			c.ReplyBytes(m, []byte(fmt.Sprint(i)))
		}
		c.Reply(m, packet.Get(0))
	}})
	return addr
}

func TestRequestStreamKeepsTheSequenceUntilDone(t *testing.T) {
	leakcheck.Check(t)
	addr := streamServer(t)
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveEvent)
	got := make(chan string, 16)
	done := make(chan error, 1)
	err := c.Conn().RequestStream(context.Background(), codec.FlagString, []byte("3"), 0, func(r *codec.Message, err error) codec.StreamStep {
		if err != nil {
			done <- err
			return codec.StreamDone
		}
		if r.Payload == nil || r.Payload.Len() == 0 {
			done <- nil
			return codec.StreamDone
		}
		got <- string(r.PayloadBytes())
		return codec.StreamMore
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(got)
	var all string
	for s := range got {
		all += s
	}
	if all != "012" {
		t.Errorf("stream items %q, want 012", all)
	}
	// The sequence number is free again: a plain request is answered.
	r, err := c.RequestBytes(context.Background(), codec.FlagString, []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
}

func TestRequestStreamEndsWithConnClosed(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		c.ReplyBytes(msg.(*codec.Message), []byte("first"))
		c.Close() // after the reply batched for this read
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveEvent)
	end := make(chan error, 1)
	n := 0
	err := c.Conn().RequestStream(context.Background(), codec.FlagString, []byte("x"), 0, func(r *codec.Message, err error) codec.StreamStep {
		if err != nil {
			end <- err
			return codec.StreamDone
		}
		n++
		return codec.StreamMore
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-end:
		if !errors.Is(err, codec.ErrConnClosed) || n != 1 {
			t.Errorf("after %d items: %v, want 1 then ErrConnClosed", n, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end when the connection closed")
	}
}

// endlessServer answers each request with a reply "item" with its sequence
// every millisecond until stop is closed, as a server-streaming action that
// only its session's end would stop.
func endlessServer(t *testing.T) (addr string, stop chan struct{}) {
	stop = make(chan struct{})
	_, addr = serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message).Keep()
		go func() {
			defer m.Release()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if c.ReplyBytes(m, []byte("item")) != nil {
						return
					}
				}
			}
		}()
	}})
	return addr, stop
}

// A stream left before its end keeps its sequence number while the peer
// goes on sending, past the timeout, so no later request can take a reply
// of it for its own; once the peer has been quiet a timeout, the number is
// free again.
func TestStreamLeftEarlyKeepsItsNumberWhileThePeerSends(t *testing.T) {
	leakcheck.Check(t)
	addr, stop := endlessServer(t)
	const timeout = 100 * time.Millisecond
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Timeout: timeout}, transport.ReceiveEvent)
	left := make(chan struct{})
	err := c.Conn().RequestStream(context.Background(), codec.FlagString, []byte("go"), 0, func(r *codec.Message, err error) codec.StreamStep {
		if err == nil {
			close(left)
		}
		return codec.StreamLeave
	})
	if err != nil {
		t.Fatal(err)
	}
	<-left
	time.Sleep(3 * timeout) // the peer sends all the while
	if st := c.Conn().Stats(); st.InFlight != 1 || st.Unknown == 0 {
		t.Fatalf("%v after leaving a stream the peer goes on with: want its number held (InFlight 1) and its replies dropped", st)
	}
	close(stop)
	testwait.For(t, 5*time.Second, "the number free once the peer stopped", func() bool { return c.Conn().Stats().InFlight == 0 })
}

// A stream takes only replies that echo its request's start: another
// action's replies with its number are dropped.
func TestRequestStreamEchoDropsForeignReplies(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		c.ReplyBytes(m, []byte("Other/item"))
		c.ReplyBytes(m, []byte("Mine/item"))
		c.ReplyBytes(m, []byte("Mine/"))
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveEvent)
	got := make(chan string, 4)
	err := c.Conn().RequestStream(context.Background(), codec.FlagString, []byte("Mine/ask"), len("Mine/"), func(r *codec.Message, err error) codec.StreamStep {
		if err != nil {
			got <- err.Error()
			return codec.StreamDone
		}
		got <- string(r.PayloadBytes())
		if string(r.PayloadBytes()) == "Mine/" {
			return codec.StreamDone
		}
		return codec.StreamMore
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Mine/item", "Mine/"} {
		if s := <-got; s != want {
			t.Fatalf("stream reply %q, want %q", s, want)
		}
	}
	testwait.For(t, 5*time.Second, "the stream's number free", func() bool { return c.Conn().Stats().InFlight == 0 })
	if st := c.Conn().Stats(); st.Unknown != 1 {
		t.Errorf("%v, want the foreign reply dropped (Unknown 1)", st)
	}
}
