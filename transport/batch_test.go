package transport_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// plainPeer accepts one connection on a std-net listener and returns it.
func plainPeer(t *testing.T) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		l.Close()
		if err == nil {
			ch <- c
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l.Addr().String(), ch
}

// dialPlainPeer connects a client to a std-net peer; both close with t.
func dialPlainPeer(t *testing.T) (*transport.Client, net.Conn) {
	t.Helper()
	addr, accepted := plainPeer(t)
	c, err := transport.Dial(context.Background(), "tcp", addr, transport.ClientConfig{}, transport.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	peer := <-accepted
	t.Cleanup(func() { peer.Close() })
	return c, peer
}

// nothingArrives reports whether c stays silent for a moment.
func nothingArrives(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	n, err := c.Read(make([]byte, 1))
	c.SetReadDeadline(time.Time{})
	return n == 0 && errors.Is(err, os.ErrDeadlineExceeded)
}

// Sends made inside Batch stay queued until it returns, then all leave;
// MessagesOut counts each send although they shared a staging buffer.
func TestBatchHoldsWritesUntilItReturns(t *testing.T) {
	leakcheck.Check(t)
	c, peer := dialPlainPeer(t)

	var silent bool
	err := c.Batch(func() {
		for range 100 {
			if err := c.SendBytes([]byte("ab"), []byte("c")); err != nil {
				t.Error(err)
			}
		}
		silent = nothingArrives(t, peer)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !silent {
		t.Error("bytes left while Batch held the writes")
	}
	if got := string(readN(t, peer, 300)); got != strings.Repeat("abc", 100) {
		t.Fatalf("peer got %q…", got[:min(len(got), 12)])
	}
	if st := c.Stats(); st.MessagesOut != 100 || st.BytesOut != 300 {
		t.Errorf("MessagesOut %d, BytesOut %d; want 100, 300", st.MessagesOut, st.BytesOut)
	}
}

// Nested batches write when the outer one ends; a panic inside a batch
// releases the hold (later sends leave at once) and goes on up.
func TestBatchNestedAndPanicking(t *testing.T) {
	leakcheck.Check(t)
	c, peer := dialPlainPeer(t)

	var afterInner bool
	c.Batch(func() {
		c.Batch(func() { c.SendBytes([]byte("in")) })
		afterInner = nothingArrives(t, peer)
		c.SendBytes([]byte("out"))
	})
	if !afterInner {
		t.Error("the inner batch's end wrote while the outer batch held writes")
	}
	if got := string(readN(t, peer, 5)); got != "inout" {
		t.Fatalf("peer got %q, want inout", got)
	}

	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want the batch's panic", v)
			}
		}()
		c.Batch(func() {
			c.SendBytes([]byte("x"))
			panic("boom")
		})
	}()
	c.SendBytes([]byte("y"))
	if got := string(readN(t, peer, 2)); got != "xy" {
		t.Fatalf("after a panicking batch the peer got %q, want xy", got)
	}
}

// A panic in NewHandler during Dial fails Dial with a *PanicError and
// leaves nothing behind.
func TestDialHandlerPanicFailsDial(t *testing.T) {
	leakcheck.Check(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // accept and drop
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	defer func() { l.Close(); <-done }()
	hooks := transport.Hooks{NewHandler: func(*transport.Session) transport.SessionHandler { panic("no handler") }}
	for _, mode := range []transport.ReceiveMode{transport.ReceiveEvent, transport.ReceivePull, transport.ReceiveSync} {
		c, err := transport.Dial(context.Background(), "tcp", l.Addr().String(), transport.ClientConfig{Mode: mode}, hooks)
		var pe *transport.PanicError
		if c != nil || !errors.As(err, &pe) || pe.Value != "no handler" {
			t.Fatalf("mode %d: Dial = %v, %v; want a *PanicError", mode, c, err)
		}
	}
}
