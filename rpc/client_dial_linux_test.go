package rpc_test

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// stalledListener listens on 127.0.0.1 with a backlog of 0. It returns
// its address and dropAccepted, which accepts one connection (the
// client's), fills the accept queue with another and closes the accepted
// one: the kernel then drops further SYNs, so dials hang until their own
// timeout.
func stalledListener(t *testing.T) (addr string, dropAccepted func()) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	must(t, err)
	must(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	must(t, syscall.Listen(fd, 0))
	f := os.NewFile(uintptr(fd), "listener")
	ln, err := net.FileListener(f)
	f.Close()
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), func() {
		c, err := ln.Accept()
		must(t, err)
		filler, err := net.Dial("tcp", ln.Addr().String()) // fills the accept queue
		must(t, err)
		t.Cleanup(func() { filler.Close() })
		c.Close()
	}
}

// While one call reconnects with a dial that hangs, other calls on the
// client end with their own context, and Close ends at once, cutting the
// dial short.
func TestReconnectDialHoldsUpNoOtherCall(t *testing.T) {
	addr, dropAccepted := stalledListener(t)
	cfg := rpc.ClientConfig{Timeout: time.Second}
	cfg.Transport.DialTimeout = 10 * time.Second
	cl, err := rpc.Dial(context.Background(), addr, cfg)
	must(t, err)
	dropAccepted()      // the client's connection ends; the next dial hangs
	for i := 0; ; i++ { // until the client has seen its connection end: calls then dial
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		cl.Invoke(ctx, "Any/Thing", nil, nil)
		cancel()
		if time.Since(start) >= 100*time.Millisecond {
			break // it dialed until its context ended
		}
		if i == 50 {
			t.Fatal("the client never redialed")
		}
	}
	dialer := make(chan error, 1)
	go func() { dialer <- cl.Invoke(context.Background(), "Any/Thing", nil, nil) }()
	time.Sleep(50 * time.Millisecond) // the goroutine above is dialing

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := cl.Invoke(ctx, "Any/Thing", nil, nil); err == nil || time.Since(start) > time.Second {
		t.Errorf("a call with a 100 ms context during the reconnect: %v after %v", err, time.Since(start))
	}
	start = time.Now()
	cl.Close()
	if err := <-dialer; !errors.Is(err, rpc.ErrClosed) || time.Since(start) > time.Second {
		t.Errorf("the reconnecting call after Close: %v after %v, want ErrClosed at once", err, time.Since(start))
	}
}
