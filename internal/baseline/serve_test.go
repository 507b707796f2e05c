package baseline_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
)

// The server loops run on in-memory connections inside a synctest bubble:
// synctest.Wait returns once the server has read everything written and is
// parked again, so counters are checked at exact points instead of polled,
// and each Write reaches the server as a read of its own (memnet's
// guarantee), so "a byte at a time" is what the loop sees, not what TCP
// might deliver. One test at the end runs over TCP, without waits.

// bubble runs f in a synctest bubble with an in-memory listener and checks
// afterwards that no goroutine outlived it.
func bubble(t *testing.T, f func(t *testing.T, l *memnet.Listener)) {
	t.Helper()
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		l := memnet.Listen("baseline")
		f(t, l)
	})
}

func dialMem(t *testing.T, l *memnet.Listener) net.Conn {
	t.Helper()
	c, err := l.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readAsync reads n bytes from c on its own goroutine (a net.Pipe reply
// blocks the server until it is read, so the test must read while it
// writes) and delivers them, or what came before an error.
func readAsync(c net.Conn, n int) <-chan []byte {
	ch := make(chan []byte, 1)
	go func() {
		b := make([]byte, n)
		k, _ := io.ReadFull(c, b)
		ch <- b[:k]
	}()
	return ch
}

func write(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// counts fails the test unless srv's counters are exactly these.
func counts(t *testing.T, when string, srv *baseline.Server, bytes, frames uint64, open int64) {
	t.Helper()
	if b, f, o := srv.Bytes.Load(), srv.Frames.Load(), srv.Open.Load(); b != bytes || f != frames || o != open {
		t.Fatalf("%s: bytes %d, frames %d, open %d; want %d, %d, %d", when, b, f, o, bytes, frames, open)
	}
}

// The frame server: an SRMP request fed a byte at a time, one read per
// byte, comes back as a reply; a one-way frame is counted only; a request
// cut after its third byte is counted as bytes at once and answered once
// the rest arrives; the counters sum over connections, ended ones
// included; Close waits for every goroutine.
func TestServeFrames(t *testing.T) {
	bubble(t, func(t *testing.T, l *memnet.Listener) {
		srv := baseline.ServeFrames(l, baseline.SRMP, baseline.Echo(baseline.SRMP))
		defer srv.Close()
		req := srmpFrame(baseline.KindRequest, 1, "split across writes", false)
		oneway := srmpFrame(baseline.KindOneWay, 2, "no answer", false)
		c := dialMem(t, l)
		replies := readAsync(c, 2*len(req))
		for i := range req {
			write(t, c, req[i:i+1])
		}
		write(t, c, cat(oneway, req[:3]))
		synctest.Wait()
		counts(t, "a request and a one-way frame whole, 3 bytes of the next", srv, uint64(len(req)+len(oneway)+3), 2, 1)
		write(t, c, req[3:])
		if got, want := <-replies, cat(replyOf(req), replyOf(req)); !bytes.Equal(got, want) {
			t.Fatalf("got % x\nwant % x", got, want)
		}
		c2 := dialMem(t, l)
		write(t, c2, oneway)
		c2.Close()
		synctest.Wait()
		want := uint64(2*len(req) + 2*len(oneway))
		counts(t, "the second connection ended", srv, want, 4, 1)
		c.Close()
		synctest.Wait()
		counts(t, "both ended", srv, want, 4, 0)
	})
}

// A frame larger than the buffer ends the connection after the echo of
// the frame before it.
func TestOversizeFrameClosesConnection(t *testing.T) {
	bubble(t, func(t *testing.T, l *memnet.Listener) {
		srv := baseline.ServeFrames(l, baseline.LengthField, baseline.Echo(baseline.LengthField))
		defer srv.Close()
		c := dialMem(t, l)
		defer c.Close()
		write(t, c, cat(lfFrame("fine"), []byte{0xFF, 0xFF}))
		got, err := io.ReadAll(c)
		if err != nil || !bytes.Equal(got, lfFrame("fine")) {
			t.Fatalf("read % x, %v: want the first echo, then EOF", got, err)
		}
		synctest.Wait()
		counts(t, "after the oversize header", srv, 8, 1, 0)
	})
}

// Count-only: frames are parsed and counted, nothing is answered, and
// Close ends a connection that is still open.
func TestCountOnly(t *testing.T) {
	bubble(t, func(t *testing.T, l *memnet.Listener) {
		srv := baseline.ServeFrames(l, baseline.LengthField, nil)
		c := dialMem(t, l)
		defer c.Close()
		in := cat(lfFrame("a"), lfFrame("bb"), lfFrame("ccc"))
		write(t, c, in)
		synctest.Wait()
		counts(t, "three frames in", srv, uint64(len(in)), 3, 1)
		// The server is parked: had it anything to say, it would be
		// parked in a Write this Read would take. The deadline passes on
		// the bubble's clock only once nothing else can happen.
		c.SetReadDeadline(time.Now().Add(time.Second))
		if n, err := c.Read(make([]byte, 16)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("count-only server answered: %d bytes, %v", n, err)
		}
		srv.Close() // with the connection still open: Close ends it and waits
		counts(t, "after Close", srv, uint64(len(in)), 3, 0)
	})
}

// The byte loop: echo, and counters summed over open and ended
// connections.
func TestServeBytes(t *testing.T) {
	bubble(t, func(t *testing.T, l *memnet.Listener) {
		srv := baseline.Serve(l, true)
		defer srv.Close()
		var conns []net.Conn
		for i := range 3 {
			c := dialMem(t, l)
			defer c.Close()
			conns = append(conns, c)
			msg := bytes.Repeat([]byte{byte(i)}, 100*(i+1))
			echo := readAsync(c, len(msg))
			write(t, c, msg)
			if got := <-echo; !bytes.Equal(got, msg) {
				t.Fatalf("echo %d: %d of %d bytes", i, len(got), len(msg))
			}
		}
		conns[0].Close()
		synctest.Wait()
		counts(t, "one of three ended", srv, 600, 0, 2)
	})
}

// Over TCP, with no waits: once both replies are back the server has
// counted everything sent before them (it counts a read before it flushes
// the replies), and Close waits for the connection goroutines, so the
// counts read after it are final.
func TestServeFramesTCP(t *testing.T) {
	defer goleak.VerifyNone(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := baseline.ServeFrames(l, baseline.SRMP, baseline.Echo(baseline.SRMP))
	defer srv.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := srmpFrame(baseline.KindRequest, 1, "over a socket", false)
	oneway := srmpFrame(baseline.KindOneWay, 2, "no answer", false)
	// However TCP cuts or joins these writes, the stream is the same.
	for _, b := range [][]byte{req[:1], req[1:5], cat(req[5:], oneway, req[:2]), req[2:]} {
		write(t, c, b)
	}
	got := make([]byte, 2*len(req))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if want := cat(replyOf(req), replyOf(req)); !bytes.Equal(got, want) {
		t.Fatalf("got % x\nwant % x", got, want)
	}
	want := uint64(2*len(req) + len(oneway))
	counts(t, "both replies back", srv, want, 3, 1)
	srv.Close()
	counts(t, "after Close", srv, want, 3, 0)
}
