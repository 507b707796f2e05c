package rpc_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
	"github.com/lifenet/lifenet/rpc"
)

// Issue 26 F4: partial HTTP requests and WebSocket frames count against
// Config.MaxPartialBytes as partial SRMP frames do, at about one byte of
// memory per byte held.

const partialCap = 1 << 20

// httpUnit is a POST of an n-byte body to Echo/Say.
func httpUnit(t *testing.T, n int) []byte {
	head := fmt.Appendf(nil, "POST /Echo/Say HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", n)
	return append(head, make([]byte, n)...)
}

// wsUnit is one WebSocket frame (a zero mask: the payload as it is) holding
// an SRMP request of Echo/Say with about n bytes of data.
func wsUnit(t *testing.T, n int) []byte {
	b := body(t, "Echo/Say", make([]byte, n))
	req := []byte{b0Request, 1, 0xFF, 0xFF, 0, 0, 0, 0} // SRMP's long header
	binary.LittleEndian.PutUint32(req[4:], uint32(len(b)))
	req = append(req, b...)
	return append(ws.AppendHeader(nil, ws.Binary, true, len(req), &[4]byte{}), req...)
}

func TestPartialHTTPAndWebSocketUnitsShareTheMemoryCap(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(t *testing.T, addr string) *rawConn
		unit func(t *testing.T, n int) []byte
	}{
		{"http", dialRaw, httpUnit},
		{"websocket", wsOpen, wsUnit},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, addr := startServer(t, rpc.Config{MaxPartialBytes: partialCap}, func(s *rpc.Server) {
				must(t, rpc.Handle(s, "Echo/Say", func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
			})
			const size, sent = 600 << 10, 300 << 10
			unit := c.unit(t, size)
			first := c.open(t, addr)
			first.write(unit[:sent])
			// What came is counted, as its buffer holds it: at least the
			// bytes, at most about the unit's size.
			waitFor(t, "the first unit counted", func() bool { return srv.Stats().PartialBytes >= sent })
			if got := srv.Stats().PartialBytes; got > size+size/8 {
				t.Errorf("a %d-byte unit, %d sent, holds %d bytes of the cap: want at most about its size", size, sent, got)
			}
			// More such units do not all fit in 1 MiB: one is refused, and
			// the cap holds.
			refused := false
			for i := 0; i < 4 && !refused; i++ {
				more := c.open(t, addr)
				more.write(unit[:size-1])
				refused = more.refused(time.Second)
				if got := srv.Stats().PartialBytes; got > partialCap {
					t.Fatalf("%d bytes held, cap %d", got, partialCap)
				}
			}
			if !refused {
				t.Fatal("four more partial units of 600 KiB were all held under a 1 MiB cap")
			}
			// The first still completes, and a call beside them is served.
			first.write(unit[sent:])
			var out []byte
			cl := dialClient(t, addr, rpc.ClientConfig{})
			if err := cl.Invoke(context.Background(), "Echo/Say", []byte("hi"), &out); err != nil || string(out) != "hi" {
				t.Fatalf("a call beside them: %q %v", out, err)
			}
		})
	}
}

// A unit's declared length reserves nothing until its bytes come: a head
// declaring 700 KiB with nothing behind it holds next to nothing of the
// cap, so a second unit of 600 KiB, half sent, still fits in 1 MiB, and
// both complete.
func TestDeclaredLengthsHoldOnlyWhatCame(t *testing.T) {
	for _, c := range []struct {
		name   string
		open   func(t *testing.T, addr string) *rawConn
		unit   func(t *testing.T, n int) []byte
		head   int // the unit's bytes before its body
		answer func(t *testing.T, rc *rawConn)
	}{
		{"http", dialRaw, httpUnit, len(httpUnit(t, 700<<10)) - 700<<10, func(t *testing.T, rc *rawConn) {
			if resp, _ := rc.readHTTP(); resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
		}},
		{"websocket", wsOpen, wsUnit, 20, func(t *testing.T, rc *rawConn) {
			if f := rc.readWS(); f.Op != ws.Binary {
				t.Errorf("frame %v", f.Op)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, addr := startServer(t, rpc.Config{MaxPartialBytes: partialCap}, func(s *rpc.Server) {
				must(t, rpc.Handle(s, "Echo/Say", func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
			})
			declared := c.unit(t, 700<<10)
			idle := c.open(t, addr)
			idle.write(declared[:c.head])
			if c.name == "websocket" { // an HTTP body's first 4 KiB are not counted: nothing is, yet
				waitFor(t, "the declared unit counted", func() bool { return srv.Stats().PartialBytes > 0 })
			}
			if got := srv.Stats().PartialBytes; got > 128<<10 {
				t.Errorf("a head declaring 700 KiB, nothing behind it, holds %d bytes of the cap", got)
			}
			const size, sent = 600 << 10, 300 << 10
			unit := c.unit(t, size)
			busy := c.open(t, addr)
			busy.write(unit[:sent])
			busy.write(unit[sent:])
			c.answer(t, busy)
			// The answer can reach the client before the handler returns
			// and gives its body's count back: wait for that, as the
			// second unit's bytes would not fit beside it.
			waitFor(t, "the answered unit's bytes given back", func() bool { return srv.Stats().PartialBytes <= 128<<10 })
			idle.write(declared[c.head:])
			c.answer(t, idle)
		})
	}
}
