package transport_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// afterWritesCall is what one AfterWrites function saw when it ran.
type afterWritesCall struct {
	ok        bool
	unwritten int64 // the session's unwritten bytes then
}

// AfterWrites waits for the bytes queued before it: a reply made in a
// corked receive (BatchSends) is written when the receive ends, and the
// function runs after that write, with nothing left unwritten; with
// nothing queued it runs at once, on the caller.
func TestAfterWritesRunsOnceTheBytesBeforeItAreWritten(t *testing.T) {
	leakcheck.Check(t)
	calls := make(chan afterWritesCall, 4)
	var inReceive atomic.Bool
	ranInReceive := make(chan bool, 4)
	_, a := startServer(t, transport.Config{}, handle(funcHandler{receive: func(s *transport.Session, p *packet.Packet) {
		inReceive.Store(true)
		defer inReceive.Store(false)
		record := func(ok bool) {
			ranInReceive <- inReceive.Load()
			calls <- afterWritesCall{ok, s.SendQueue().Bytes}
		}
		if bytes.Equal(p.Bytes(), []byte("idle")) {
			s.AfterWrites(writtenFunc(record)) // nothing unwritten: at once
			return
		}
		if err := s.SendBytes([]byte("pong")); err != nil {
			t.Errorf("SendBytes: %v", err)
		}
		s.AfterWrites(writtenFunc(record)) // "pong" is queued until the receive ends
	}}, true), "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)

	c.Write([]byte("ping"))
	if got := readN(t, c, 4); string(got) != "pong" {
		t.Fatalf("reply %q", got)
	}
	got := <-calls
	if !got.ok || got.unwritten != 0 {
		t.Errorf("after a queued reply: ok %v with %d bytes unwritten, want ok and 0", got.ok, got.unwritten)
	}
	if <-ranInReceive {
		t.Errorf("the function ran inside the corked receive, before its reply was written")
	}

	c.Write([]byte("idle"))
	got = <-calls
	if !got.ok || !<-ranInReceive {
		t.Errorf("with nothing unwritten: ok %v, want it run at once on the caller", got.ok)
	}
}

// Functions waiting for bytes that never leave run with ok false when the
// session closes, in the order they were made; one made on a closing
// session runs with false at once.
func TestAfterWritesOfUnwrittenBytesSeesTheClose(t *testing.T) {
	leakcheck.Check(t)
	order := make(chan string, 4)
	sess := make(chan *transport.Session, 1)
	_, a := startServer(t, transport.Config{SocketSendBuffer: 4096}, handle(funcHandler{receive: func(s *transport.Session, p *packet.Packet) {
		for range 48 { // 3 MiB: more than the peer's and this socket's buffers hold, less than SendQueueBytes
			if err := s.Enqueue(packet.Get(64 << 10)); err != nil {
				t.Errorf("Enqueue: %v", err)
				return
			}
		}
		s.AfterWrites(writtenFunc(func(ok bool) { order <- "first " + okString(ok) }))
		s.Enqueue(bytesPacket([]byte("x")))
		s.AfterWrites(writtenFunc(func(ok bool) { order <- "second " + okString(ok) }))
		sess <- s
	}}, false), "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.(interface{ SetReadBuffer(int) error }).SetReadBuffer(4096)
	c.Write([]byte("fill"))
	s := <-sess
	select {
	case got := <-order:
		t.Fatalf("%q before the close, with megabytes unread", got)
	case <-time.After(100 * time.Millisecond):
	}
	s.Close()
	for _, want := range []string{"first unwritten", "second unwritten"} {
		select {
		case got := <-order:
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second): // generous: a loaded machine
			t.Fatalf("no %q within 10 s of the close", want)
		}
	}
	s.AfterWrites(writtenFunc(func(ok bool) { order <- "late " + okString(ok) }))
	if got := <-order; got != "late unwritten" {
		t.Errorf("on a closed session: %q", got)
	}
}

// writtenFunc is a transport.WriteWaiter made of a function.
type writtenFunc func(ok bool)

func (f writtenFunc) Written(ok bool) { f(ok) }

func okString(ok bool) string {
	if ok {
		return "written"
	}
	return "unwritten"
}
