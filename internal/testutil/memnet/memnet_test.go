package memnet_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
)

// accept runs Accept on its own goroutine and hands back what it returns.
func accept(l net.Listener) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	return ch
}

// A dial pairs with an accept: bytes flow both ways, and each end names
// the other's address, distinct per connection.
func TestDialAccept(t *testing.T) {
	leakcheck.Check(t)
	l := memnet.Listen("srv")
	defer l.Close()
	if a := l.Addr(); a.Network() != "memnet" || a.String() != "srv" {
		t.Fatalf("listener address %s/%s", a.Network(), a)
	}
	var seen []string
	for i := range 2 {
		accepted := accept(l)
		c, err := l.Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s := <-accepted
		if c.RemoteAddr() != l.Addr() || s.LocalAddr() != l.Addr() || s.RemoteAddr() != c.LocalAddr() {
			t.Fatalf("dial %d: client %v→%v, server %v→%v", i, c.LocalAddr(), c.RemoteAddr(), s.LocalAddr(), s.RemoteAddr())
		}
		seen = append(seen, c.LocalAddr().String())
		go c.Write([]byte("ping"))
		got := make([]byte, 4)
		if _, err := io.ReadFull(s, got); err != nil || string(got) != "ping" {
			t.Fatalf("server read %q, %v", got, err)
		}
		go s.Write([]byte("pong"))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "pong" {
			t.Fatalf("client read %q, %v", got, err)
		}
		c.Close()
		if _, err := s.Read(got); err != io.EOF {
			t.Fatalf("server read after the client closed: %v, want io.EOF", err)
		}
		s.Close()
	}
	if seen[0] != "srv#1" || seen[1] != "srv#2" {
		t.Fatalf("client addresses %q, want srv#1 and srv#2", seen)
	}
}

// Close ends a pending Accept with net.ErrClosed, refuses later dials and
// leaves an open connection working.
func TestClose(t *testing.T) {
	leakcheck.Check(t)
	l := memnet.Listen("srv")
	accepted := accept(l)
	c, err := l.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-accepted
	defer s.Close()

	errc := make(chan error, 1)
	go func() { _, err := l.Accept(); errc <- err }()
	l.Close()
	l.Close() // harmless
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if _, err := l.Dial(context.Background()); !errors.Is(err, memnet.ErrRefused) {
		t.Fatalf("Dial after Close: %v, want ErrRefused", err)
	}
	go c.Write([]byte("x"))
	if _, err := io.ReadFull(s, make([]byte, 1)); err != nil {
		t.Fatalf("a connection made before Close: %v", err)
	}
}

// In a bubble, every wait is durable: a Dial nobody accepts holds until
// its context's deadline (on the bubble's clock) or a Close; a server
// blocked in Accept and Read lets synctest.Wait return; and each Write
// reaches the peer as a read of its own.
func TestSynctestBubble(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		l := memnet.Listen("srv")
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		start := time.Now()
		if _, err := l.Dial(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Hour {
			t.Fatalf("unaccepted Dial: %v after %v, want the deadline after 1h", err, time.Since(start))
		}
		dialed := make(chan error, 1)
		go func() { _, err := l.Dial(context.Background()); dialed <- err }()
		synctest.Wait()
		l.Close()
		if err := <-dialed; !errors.Is(err, memnet.ErrRefused) {
			t.Fatalf("Dial pending at Close: %v, want ErrRefused", err)
		}

		l = memnet.Listen("srv2")
		defer l.Close()
		reads := make(chan string, 8)
		go func() {
			s, err := l.Accept()
			if err != nil {
				return
			}
			defer s.Close()
			buf := make([]byte, 64)
			for {
				n, err := s.Read(buf)
				if err != nil {
					close(reads)
					return
				}
				reads <- string(buf[:n])
			}
		}()
		synctest.Wait() // the server is parked in Accept
		c, err := l.Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{"GE", "T /", "x"} {
			c.Write([]byte(part))
		}
		synctest.Wait() // the server is parked in Read, every write read
		if len(reads) != 3 {
			t.Fatalf("%d reads for 3 writes", len(reads))
		}
		for _, want := range []string{"GE", "T /", "x"} {
			if got := <-reads; got != want {
				t.Fatalf("read %q, want %q: writes must not merge", got, want)
			}
		}
		c.Close()
		if _, open := <-reads; open {
			t.Fatal("server read more after the client closed")
		}
	})
}
