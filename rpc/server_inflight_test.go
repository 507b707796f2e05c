package rpc_test

import (
	"context"
	"encoding/binary"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// Streams count against MaxInFlight: past it a stream request gets a 503
// error reply naming ErrBusy instead of a goroutine of its own. Every
// stream request used to get one, whatever the cap, so one connection
// could start any number of them.
func TestStreamsPastMaxInFlightGet503(t *testing.T) {
	const calls = 20
	g := newGate(t, calls)
	var now, peak atomic.Int32
	_, addr := startServer(t, rpc.Config{MaxInFlight: 1}, func(srv *rpc.Server) {
		must(t, rpc.HandleStream(srv, "S/Hold", func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				n := now.Add(1)
				defer now.Add(-1)
				if n > peak.Load() {
					peak.Store(n) // racy max is fine: any n > 1 fails the test
				}
				g.wait(ctx)
			}
		}))
	})
	t.Cleanup(g.open)
	rc := dialRaw(t, addr)
	var in []byte
	for i := range calls {
		in = append(in, srmp(b0Request, byte(i+1), body(t, "S/Hold", nil))...)
	}
	rc.write(in)
	recv(t, g.entered, "the first stream")
	for range calls - 1 {
		f := rc.readFrame()
		if f.b0 != b0Error || f.seq == 1 {
			t.Fatalf("frame %02X seq %d % X; want an error reply to a stream past the cap", f.b0, f.seq, f.payload)
		}
		p := f.payload[1+int(f.payload[0]):]
		if code := binary.LittleEndian.Uint32(p); code != 503 || !strings.Contains(string(p[8:]), rpc.ErrBusy.Error()) {
			t.Fatalf("seq %d: code %d %q; want 503 naming ErrBusy", f.seq, code, p[8:])
		}
	}
	g.open()
	if f := rc.readFrame(); f.b0 != b0StreamReply || f.seq != 1 {
		t.Fatalf("frame %02X seq %d; want the first stream's end", f.b0, f.seq)
	}
	if p := peak.Load(); p != 1 {
		t.Fatalf("MaxInFlight 1, yet %d streams of one connection ran at once", p)
	}
}
