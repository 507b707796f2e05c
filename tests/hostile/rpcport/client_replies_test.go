package rpcport_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
)

// A malicious server's bad replies fail the call at once, with an error
// naming the action and the cause, not after the call's timeout and not as
// a bare codec or encoding error: a reply with the call's number and name
// whose result does not decode into the caller's type, and a reply frame
// past the client's frame limit.
func TestBadRepliesFailTheCallAtOnce(t *testing.T) {
	leakcheck.Check(t)
	for _, c := range []struct {
		name  string
		reply func(seq byte) []byte
		is    error
		says  string
	}{
		{"a result that does not decode", func(seq byte) []byte {
			return srmpFrame(0x81, seq, rawBody([]byte("Bench/Who"), []byte(`{"A":"not a number"`)))
		}, rpc.ErrBadReply, "Bench/Who"},
		{"a frame past the limit", func(seq byte) []byte {
			h := []byte{0x81, seq, 0xFF, 0xFF, 0, 0, 0, 0}
			binary.LittleEndian.PutUint32(h[4:], 64<<20)
			return h
		}, codec.ErrFrameTooLarge, "Bench/Who"},
	} {
		addr := evilServer(t, c.reply)
		cl, err := rpc.Dial(context.Background(), "tcp://"+addr, rpc.ClientConfig{Log: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		var res struct{ A int }
		start := time.Now()
		err = cl.Invoke(context.Background(), "Bench/Who", nil, &res)
		took := time.Since(start)
		cl.Close()
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want %v naming %s", c.name, err, c.is, c.says)
		}
		if took > 2*time.Second {
			t.Errorf("%s: failed after %v", c.name, took)
		}
	}
}

// evilServer answers every SRMP request with reply(its sequence number).
func evilServer(t *testing.T, reply func(seq byte) []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					h := make([]byte, 4)
					if _, err := io.ReadFull(r, h); err != nil {
						return
					}
					n := int(binary.LittleEndian.Uint16(h[2:]))
					if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
						return
					}
					c.Write(reply(h[1]))
				}
			}()
		}
	}()
	return l.Addr().String()
}
