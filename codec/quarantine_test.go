package codec_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// A request that timed out keeps its sequence number out of use for a
// while: the late reply, which the server sends only when it sees that
// number again, cannot be taken for a new request's reply.
func TestTimedOutSequenceIsQuarantined(t *testing.T) {
	leakcheck.Check(t)
	var held *codec.Message
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		if string(m.PayloadBytes()) == "late" && held == nil {
			held = m.Keep() // answered only when its number comes back
			return
		}
		if held != nil && held.Seq == m.Seq {
			c.Reply(held, held.TakePayload())
			held.Release()
			held = nil
		}
		c.Reply(m, m.Payload)
	}, OnClose: func(*codec.Conn, error) {
		if held != nil {
			held.Release()
		}
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Timeout: 300 * time.Millisecond}, transport.ReceiveEvent)
	ctx := context.Background()
	if _, err := c.RequestBytes(ctx, codec.FlagPacket, []byte("late")); !errors.Is(err, codec.ErrTimeout) {
		t.Fatalf("the held request: %v, want ErrTimeout", err)
	}
	for i := range 300 { // wraps the 8-bit sequence
		want := fmt.Sprint(i)
		r, err := c.RequestBytes(ctx, codec.FlagPacket, []byte(want))
		if got := replyText(t, r, err); got != want {
			t.Fatalf("request %d got %q: another request's reply", i, got)
		}
	}
}

// RequestBytesPrefixed drops a reply that does not repeat the request's
// prefix (an earlier request's, on a reused number) and waits for its own.
func TestRequestBytesPrefixedDropsForeignReplies(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		c.ReplyBytes(m, []byte("other:stale")) // a duplicate of some earlier answer
		c.ReplyBytes(m, append([]byte("mine:"), m.PayloadBytes()[5:]...))
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveEvent)
	r, err := c.Conn().RequestBytesPrefixed(context.Background(), codec.FlagPacket, []byte("mine:hello"), 5)
	if got := replyText(t, r, err); got != "mine:hello" {
		t.Fatalf("got %q", got)
	}
	if n := c.Conn().Stats().Unknown; n != 1 {
		t.Errorf("%d replies counted as unknown, want the foreign one", n)
	}
}

// A request on a connection that has already ended fails with an error
// that is ErrConnClosed and also ErrNotSent (it never left), in either
// receive mode.
func TestRequestOnEndedConnectionIsNotSent(t *testing.T) {
	for _, mode := range []transport.ReceiveMode{transport.ReceiveEvent, transport.ReceiveSync} {
		leakcheck.Check(t)
		_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
			c.Session().Close()
		}})
		c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Timeout: 2 * time.Second}, mode)
		ctx := context.Background()
		// The server ends the connection on it; the request, pending then,
		// fails with ErrConnClosed alone (it may have been served).
		if _, err := c.RequestBytes(ctx, codec.FlagPacket, []byte("x")); !errors.Is(err, codec.ErrConnClosed) || errors.Is(err, codec.ErrNotSent) {
			t.Fatalf("mode %v: the pending request: %v, want ErrConnClosed without ErrNotSent", mode, err)
		}
		select { // the client's session has ended
		case <-c.Transport().Session().Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("mode %v: the client's session still open", mode)
		}
		if _, err := c.RequestBytes(ctx, codec.FlagPacket, []byte("y")); !errors.Is(err, codec.ErrConnClosed) || !errors.Is(err, codec.ErrNotSent) {
			t.Fatalf("mode %v: %v, want ErrConnClosed and ErrNotSent", mode, err)
		}
	}
}
