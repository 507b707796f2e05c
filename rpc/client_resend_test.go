package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
)

// silentServer accepts connections, never reads or answers, and counts
// them on accepted.
func silentServer(t *testing.T) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ch := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-ch:
				c.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().String(), ch
}

// A request whose write failed part way may have reached the server whole
// (the rest of the batch is what failed, or the server read it all): it
// fails with ErrConnClosed and is not sent again on a new connection,
// where it would run twice.
func TestRequestCutOffPartWayIsNotResent(t *testing.T) {
	addr, accepted := silentServer(t)
	cfg := rpc.ClientConfig{Timeout: 5 * time.Second, Framer: codec.FramerConfig{MaxFrame: 128 << 20}} // the client lets the 64 MiB request go
	cfg.Transport.WriteTimeout = 3 * time.Second                                                       // well past the coarse clock's lag and a loaded machine's pauses, so the write starts before its deadline
	cl := dialClient(t, addr, cfg)
	err := cl.Invoke(context.Background(), "Do/Big", bytes.Repeat([]byte{1}, 64<<20), nil)
	if !errors.Is(err, codec.ErrConnClosed) || errors.Is(err, codec.ErrNotSent) {
		t.Fatalf("a request cut off part way: %v, want ErrConnClosed without ErrNotSent", err)
	}
	// A resend happens before Invoke returns, so its bytes would be waiting
	// by now on a later connection (the client may also have reconnected,
	// sending nothing).
	carried := 0
	for done := false; !done; {
		select {
		case c := <-accepted:
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if n, _ := c.Read(make([]byte, 1)); n > 0 {
				carried++
			}
		default:
			done = true
		}
	}
	if carried != 1 {
		t.Fatalf("the request went out on %d connections, want 1", carried)
	}
}
