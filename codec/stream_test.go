package codec_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/leakcheck"
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
	err := c.Conn().RequestStream(context.Background(), codec.FlagString, []byte("3"), func(r *codec.Message, err error) bool {
		if err != nil {
			done <- err
			return false
		}
		if r.Payload == nil || r.Payload.Len() == 0 {
			done <- nil
			return false
		}
		got <- string(r.PayloadBytes())
		return true
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
	err := c.Conn().RequestStream(context.Background(), codec.FlagString, []byte("x"), func(r *codec.Message, err error) bool {
		if err != nil {
			end <- err
			return false
		}
		n++
		return true
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
