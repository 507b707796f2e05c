package codec_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// expiringServer serves SRMP with a 300 ms frame deadline and reports why
// each connection ended.
func expiringServer(t *testing.T) (string, chan error) {
	ended := make(chan error, 8)
	_, addr := serve(t, "tcp", codec.Options{
		Pipeline: codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{Expire: 300 * time.Millisecond})),
		Handler:  echoSRMP,
		OnClose:  func(_ *codec.Conn, err error) { ended <- err },
	})
	return addr, ended
}

// A peer that stops in the middle of a frame is closed within Expire (plus
// the sweep), without any later byte to notice it by.
func TestPartialFrameExpiresByTheClock(t *testing.T) {
	leakcheck.Check(t)
	addr, ended := expiringServer(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	c.Write([]byte{0x01, 0x01, 0x10, 0x00, 'h', 'a'}) // 16 bytes announced, 2 sent
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("reading until the server closes: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("closed after %v, want within Expire (300 ms) + a sweep", el)
	}
	if err := <-ended; !errors.Is(err, codec.ErrFrameExpired) {
		t.Errorf("ended with %v, want ErrFrameExpired", err)
	}
}

// A frame trickled a byte at a time must still complete within Expire of
// its first byte: each byte no longer restarts the clock.
func TestTrickledFrameExpires(t *testing.T) {
	leakcheck.Check(t)
	addr, ended := expiringServer(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frame := []byte{0x01, 0x01, 0x10, 0x00}
	frame = append(frame, make([]byte, 16)...)
	var end error
	for i := 0; i < len(frame) && end == nil; i++ {
		c.Write(frame[i : i+1])
		select {
		case end = <-ended:
		case <-time.After(100 * time.Millisecond):
		}
	}
	if end == nil {
		select {
		case end = <-ended:
		case <-time.After(2 * time.Second):
		}
	}
	var ce *transport.CloseError
	if !errors.Is(end, codec.ErrFrameExpired) || !errors.As(end, &ce) {
		t.Errorf("trickled frame: %v, want ErrFrameExpired", end)
	}
}

// Peers that send the start of large frames cannot take more than
// MaxPartialBytes of the server's memory between them: the connection
// whose frame would pass the cap ends with ErrMemoryCap, and small frames
// are still served.
func TestPartialFramesShareAMemoryCap(t *testing.T) {
	leakcheck.Check(t)
	ended := make(chan error, 8)
	_, addr := serve(t, "tcp", codec.Options{
		Pipeline:        codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{Size: 4}, codec.FramerConfig{})),
		Handler:         func(c *codec.Conn, msg any) { c.Write(msg) },
		MaxPartialBytes: 1 << 20,
		OnClose:         func(_ *codec.Conn, err error) { ended <- err },
	})
	start := []byte{0x00, 0x00, 0x10, 0x00} // a 1 MiB frame announced (little-endian 0x100000)
	start = append(start, make([]byte, 300_000)...)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.Write(start)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, codec.ErrMemoryCap) {
			t.Fatalf("a connection ended with %v, want ErrMemoryCap", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("four partial frames of 300 kB each held past a 1 MiB cap")
	}
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{Size: 4}, codec.FramerConfig{}))}, transport.ReceiveEvent)
	r, err := c.RequestPacket(context.Background(), payload([]byte("small")))
	if err != nil || string(r.Bytes()) != "small" {
		t.Fatalf("a small frame under the cap: %v", err)
	}
	r.Release()
}

// A request that arrived in two reads is complete once the second one
// comes: serving it, however long an inline handler takes (or its reply
// waits to be written), is no partial frame, so Expire does not end the
// connection under it. Expiry is for bytes not yet framed; the bytes after
// the frame start a new frame whose clock runs from when reading resumes.
// In a synctest bubble over in-memory connections: each Write is one read
// of the server, and the handler's sleep and the sweeps run on the bubble's
// clock.
func TestServedFrameDoesNotExpire(t *testing.T) {
	leakcheck.Check(t)
	for _, tc := range []struct {
		name string
		tail []byte // sent with the frame's last bytes: the start of the next frame
	}{{"frame ends the read", nil}, {"next frame starts in the read", []byte{0x01, 0x02}}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { servedFrameDoesNotExpire(t, tc.tail) })
		})
	}
}

func servedFrameDoesNotExpire(t *testing.T, tail []byte) {
	const expire = 300 * time.Millisecond
	ended := make(chan error, 1)
	c := memPeer(t, transport.Config{}, codec.Options{
		Pipeline: codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{Expire: expire})),
		Handler: func(c *codec.Conn, msg any) {
			time.Sleep(5 * expire) // an inline handler: the frame is served for five Expires
			echoSRMP(c, msg)
		},
		OnClose: func(_ *codec.Conn, err error) { ended <- err },
	})
	frame := append([]byte{0x01, 0x01, 0x10, 0x00}, bytes.Repeat([]byte{'x'}, 16)...)
	c.Write(frame[:6]) // a partial frame: its clock starts
	time.Sleep(expire / 2)
	c.Write(append(frame[6:len(frame):len(frame)], tail...)) // completes it
	reply := make([]byte, len(frame))
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatalf("the served request's reply: %v (connection ended: %v)", err, <-ended)
	}
	if !bytes.Equal(reply[4:], frame[4:]) {
		t.Fatalf("reply % x, want the request's payload", reply)
	}
	// The tail left after the frame is a partial frame of its own: it
	// still expires, Expire after the server went back to reading.
	if tail != nil {
		start := time.Now()
		if err := <-ended; !errors.Is(err, codec.ErrFrameExpired) {
			t.Fatalf("the partial frame after the served one ended with %v, want ErrFrameExpired", err)
		}
		if d := time.Since(start); d < expire || d > expire+time.Second {
			t.Errorf("the next frame's partial expired %v after the reply, want Expire (%v) plus a sweep", d, expire)
		}
		return
	}
	if err := endedNow(ended); err != nil {
		t.Fatalf("connection ended after the reply: %v", err)
	}
}

// endedNow returns the error a connection ended with, or nil while it is
// open (in a bubble: once every goroutine has done what it can).
func endedNow(ended chan error) error {
	synctest.Wait()
	select {
	case err := <-ended:
		return err
	default:
		return nil
	}
}
