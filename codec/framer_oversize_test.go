package codec_test

import (
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Issue 13, battery item 3: frames declaring the largest lengths a header
// can hold, against a 16 MiB limit, are refused before any buffer is taken.

const (
	oversizeFrames = 1000
	oversizeLimit  = 16 << 20
	oversizeHeap   = 1 << 20 // the most the heap may grow over all of them
)

// The headers of the guard: each codec's 4 GiB − 1 (a negative or
// out-of-range length: ErrCorruptFrame) and the largest length it accepts
// the form of, 2 GiB − 1 (over the limit: ErrFrameTooLarge).
func oversizeHeaders() []struct {
	name   string
	split  codec.Splitter
	header []byte
	want   error
} {
	type row = struct {
		name   string
		split  codec.Splitter
		header []byte
		want   error
	}
	var rows []row
	for _, n := range []uint64{1<<32 - 1, 1<<31 - 1} {
		want := codec.ErrFrameTooLarge
		if n >= 1<<31 {
			want = codec.ErrCorruptFrame
		}
		rows = append(rows, row{"srmp", codec.SRMPSplitter{}, srmpLong(srmpRequest, 1, uint32(n)), want})
		for _, lf := range []codec.LengthField{{Size: 4}, {Offset: 2, Size: -4}, {Size: codec.VarintLength}} {
			rows = append(rows, row{"length field", lf, lfField(lf, n), want})
		}
	}
	return rows
}

// 1,000 headers per codec and length through framers (one per header, as
// each refusal ends its connection): each refused with its error, no pooled
// buffer taken, and the heap grows by less than 1 MiB over the thousand —
// what they all allocated, not only what stayed.
func TestOversizedLengthsTakeNoMemoryFramer(t *testing.T) {
	leakcheck.Check(t)
	cfg := codec.FramerConfig{MaxFrame: oversizeLimit}
	for _, h := range oversizeHeaders() {
		mark := leakcheck.Mark()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		refused := 0
		for range oversizeFrames {
			f := codec.NewFramer(h.split, cfg)
			p := packet.Wrap(h.header)
			err := f.Feed(p, func(*packet.Packet) error { t.Error("a frame was cut"); return nil })
			p.Release()
			if errors.Is(err, h.want) && f.Buffered() == 0 {
				refused++
			}
		}
		runtime.ReadMemStats(&after)
		if refused != oversizeFrames {
			t.Errorf("%s % X: %d of %d refused with %v", h.name, h.header, refused, oversizeFrames, h.want)
		}
		if n := len(leakcheck.Outstanding(mark)); n != 0 {
			t.Errorf("%s % X: %d pooled buffers taken", h.name, h.header, n)
		}
		grew := after.TotalAlloc - before.TotalAlloc
		if grew >= oversizeHeap {
			t.Errorf("%s % X: %d bytes allocated for %d refusals, want < %d", h.name, h.header, grew, oversizeFrames, oversizeHeap)
		}
		t.Logf("%s % X: %d refused, %d bytes allocated in all", h.name, h.header, refused, grew)
	}
}

// 1,000 connections to a server with a 16 MiB limit, half declaring
// 4 GiB − 1 and half 2 GiB − 1 in SRMP's long form: each ends at once as a
// protocol violation with its error, and the live heap after them is
// within 1 MiB of before.
func TestOversizedLengthsTakeNoMemoryServer(t *testing.T) {
	leakcheck.Check(t)
	var corrupt, tooLarge, other atomic.Int32
	ended := make(chan struct{}, oversizeFrames+1)
	srv, addr := serveCfg(t, "tcp", transport.Config{}, codec.Options{
		Pipeline: codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{MaxFrame: oversizeLimit})),
		Handler:  func(*codec.Conn, any) { t.Error("a message reached the handler") },
		OnClose: func(_ *codec.Conn, err error) {
			var ce *transport.CloseError
			switch {
			case !errors.As(err, &ce) || ce.Reason != transport.ReasonProtocol:
				other.Add(1)
			case errors.Is(err, codec.ErrCorruptFrame):
				corrupt.Add(1)
			case errors.Is(err, codec.ErrFrameTooLarge):
				tooLarge.Add(1)
			default:
				other.Add(1)
			}
			ended <- struct{}{}
		},
	})
	headers := [][]byte{srmpLong(srmpRequest, 1, 1<<32-1), srmpLong(srmpRequest, 1, 1<<31-1)}
	// Warm up the server's pools and goroutines, so that what stays after
	// is what the thousand took.
	hostileSend(t, addr, headers[0])
	awaitEnds(t, ended, 1)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var next atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < oversizeFrames && !t.Failed(); i = next.Add(1) - 1 {
				hostileSend(t, addr, headers[i%2])
			}
		})
	}
	wg.Wait()
	awaitEnds(t, ended, oversizeFrames)
	runtime.GC()
	runtime.ReadMemStats(&after)

	if c, l, o := corrupt.Load(), tooLarge.Load(), other.Load(); c != oversizeFrames/2+1 || l != oversizeFrames/2 || o != 0 {
		t.Errorf("%d ended ErrCorruptFrame, %d ErrFrameTooLarge, %d otherwise; want %d, %d, 0", c, l, o, oversizeFrames/2+1, oversizeFrames/2)
	}
	if n := srv.Transport().Stats().Closed[transport.ReasonProtocol]; n != oversizeFrames+1 {
		t.Errorf("%d protocol closes, want %d", n, oversizeFrames+1)
	}
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if grew >= oversizeHeap {
		t.Errorf("live heap grew by %d bytes over %d oversized frames, want < %d", grew, oversizeFrames, oversizeHeap)
	}
	t.Logf("live heap %+d bytes; %d bytes allocated in all (%d per connection, accept and session included)",
		grew, after.TotalAlloc-before.TotalAlloc, (after.TotalAlloc-before.TotalAlloc)/oversizeFrames)
}

// awaitEnds waits for n connection ends reported on ended.
func awaitEnds(t *testing.T, ended <-chan struct{}, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for i := range n {
		select {
		case <-ended:
		case <-timeout:
			t.Fatalf("%d of %d connections ended after 30 s", i, n)
		}
	}
}

// hostileSend dials addr, sends b and reads until the server ends the
// connection.
func hostileSend(t *testing.T, addr string, b []byte) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(b); err != nil {
		t.Error(err)
		return
	}
	// A server that ends a connection with bytes unread resets it.
	if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("waiting for the server to end the connection: %v", err)
	}
}
