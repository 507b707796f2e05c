package codec_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// With Options.ReadTimes a handler learns when the read that completed its
// message arrived: after the client wrote the frame's last byte and before
// the handler ran. A frame sent in two writes takes the second's time.
// Without it the time is zero.
func TestReadTimeIsTheReadThatCompletedTheFrame(t *testing.T) {
	leakcheck.Check(t)
	type seen struct{ read, handled time.Time }
	got := make(chan seen, 2)
	handler := func(c *codec.Conn, msg any) {
		got <- seen{c.ReadTime(), time.Now()}
		echoSRMP(c, msg)
	}
	_, on := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: handler, ReadTimes: true})
	_, off := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: handler})

	m := request("ping")
	enc, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.AppendTo(nil)
	enc.Release()
	c, err := net.Dial("tcp", on)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(frame[:3])
	time.Sleep(20 * time.Millisecond) // the first part is read alone (the assertion holds either way)
	lastWrite := time.Now()
	c.Write(frame[3:])
	s := <-got
	if s.read.IsZero() || s.read.Before(lastWrite) || s.read.After(s.handled) {
		t.Errorf("ReadTime %v: want between the last write %v and the handler's run %v", s.read, lastWrite, s.handled)
	}

	cl := dialCodec(t, "tcp", off, codec.Options{Pipeline: srmpPipeline()})
	r, err := cl.Request(context.Background(), request("ping"))
	replyText(t, r, err)
	if s := <-got; !s.read.IsZero() {
		t.Errorf("ReadTime without Options.ReadTimes: %v, want zero", s.read)
	}
}
