package rpcport_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
)

// A call's deadline bounds the whole call, its write included: against a
// server that takes the connection and never reads, a call of 1, 3 and 8
// MiB of arguments with a 2 s deadline returns by then (the connection is
// closed: part of the request may be on the wire), not after the
// transport's WriteTimeout (30 s).
func TestCallDeadlineBoundsItsWrite(t *testing.T) {
	leakcheck.Check(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetReadBuffer(16 << 10)
			accepted <- c // never read
		}
	}()
	const deadline = 2 * time.Second
	var figures []string
	for _, mib := range []int{1, 3, 8} {
		cl, err := rpc.Dial(context.Background(), "tcp://"+l.Addr().String(), rpc.ClientConfig{Log: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		err = cl.Invoke(ctx, "Bench/EchoPacket", make([]byte, mib<<20), nil)
		took := time.Since(start)
		cancel()
		cl.Close()
		select {
		case c := <-accepted:
			held = append(held, c)
		default:
		}
		figures = append(figures, fmt.Sprintf("%d MiB: %v (%v)", mib, took.Round(time.Millisecond), err))
		switch {
		case err == nil:
			t.Errorf("%d MiB: the call succeeded against a server that never reads", mib)
		case !errors.Is(err, rpc.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("%d MiB: %v; want a timeout", mib, err)
		}
		if took > deadline+2*time.Second*slow() { // the bound is 200 ms; a loaded machine gets more
			t.Errorf("%d MiB: returned after %v, deadline %v", mib, took, deadline)
		}
	}
	t.Logf("FIGURES a call's write past its deadline, 2 s deadline, server never reads: %s", strings.Join(figures, "; "))
}
