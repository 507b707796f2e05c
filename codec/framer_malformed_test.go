package codec_test

import (
	"errors"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Issue 13, battery item 1: the malformed-frame tables (framer_malformed_tables_test.go)
// against a framer, whole and in small pieces, and against a real server
// over loopback.

// poolClass is the capacity of the pooled buffer that serves n bytes.
func poolClass(n int) int {
	c := packet.MinPooled
	for c < n {
		c <<= 1
	}
	return c
}

// pooledBytes is the capacity of the pooled buffers taken since mark and
// still held.
func pooledBytes(mark uint64) int {
	n := 0
	for _, b := range leakcheck.Outstanding(mark) {
		n += b.Size
	}
	return n
}

// allocSlack is the heap a framer may take for one case besides its frame
// buffer: the Framer itself, an error value, buffer tracking's records.
const allocSlack = 16 << 10

// Every case through a framer: the frames before the end, the named error
// (from Feed, or ErrTruncated from Close for a frame cut short), the expiry
// of a frame left incomplete, and memory: the pooled bytes held never pass
// the size class of the frame limit (of the frame's own size, for a cut
// frame), the heap taken by a whole-input case stays within that plus a
// little, and every buffer is released.
func TestHostileFramesFramer(t *testing.T) {
	leakcheck.Check(t)
	perCodec := map[string]int{}
	for _, tb := range frameTables() {
		perCodec[strings.Fields(tb.name)[0]] += len(tb.cases)
		t.Run(tb.name, func(t *testing.T) {
			for _, c := range tb.cases {
				runFramerCase(t, tb, c, len(c.in))
				piece := 1 // a byte at a time, or pieces of an odd size for the large frames
				if len(c.in) > 4096 {
					piece = 997
				}
				runFramerCase(t, tb, c, piece)
			}
		})
	}
	for name, n := range perCodec {
		if n < 48 {
			t.Errorf("%s: %d malformed-frame cases, the battery asks for at least 48", name, n)
		}
		t.Logf("%s: %d cases", name, n)
	}
}

func runFramerCase(t *testing.T, tb frameTable, c frameCase, piece int) {
	t.Helper()
	limit := poolClass(tb.cfg.MaxFrame)
	if c.frame > 0 {
		limit = poolClass(c.frame)
	}
	mark := leakcheck.Mark()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f := codec.NewFramer(tb.split, tb.cfg)
	frames, peak := 0, 0
	var err error
	for off := 0; off < len(c.in) && err == nil; off += piece {
		p := packet.Wrap(c.in[off:min(off+piece, len(c.in))])
		err = f.Feed(p, func(*packet.Packet) error { frames++; return nil })
		p.Release()
		peak = max(peak, pooledBytes(mark))
	}
	buffered := f.Buffered()
	expired := f.Expired(time.Now().Add(tb.cfg.Expire + time.Millisecond))
	closeErr := f.Close()
	runtime.ReadMemStats(&after)

	name := c.name
	if piece < len(c.in) {
		name += ", in pieces"
	}
	switch {
	case c.want != nil && !c.partial: // refused from its header
		if !errors.Is(err, c.want) || buffered != 0 || closeErr != nil {
			t.Errorf("%s: Feed %v (%d buffered), Close %v; want %v and nothing held", name, err, buffered, closeErr, c.want)
		}
	case c.partial: // cut short: held until the end, which either EOF or the clock brings
		if err != nil || buffered == 0 || !expired || !errors.Is(closeErr, codec.ErrTruncated) {
			t.Errorf("%s: Feed %v, %d buffered, expired %v, Close %v; want a held frame that expires and ErrTruncated", name, err, buffered, expired, closeErr)
		}
	default:
		if err != nil || buffered != 0 || expired || closeErr != nil {
			t.Errorf("%s: Feed %v, %d buffered, expired %v, Close %v; want whole frames", name, err, buffered, expired, closeErr)
		}
	}
	if want := len(c.sizes) + int(c.unknown); frames != want { // replies are frames too: the matcher drops them later
		t.Errorf("%s: %d frames, want %d", name, frames, want)
	}
	if peak > limit {
		t.Errorf("%s: held %d pooled bytes, more than %d", name, peak, limit)
	}
	if left := pooledBytes(mark); left != 0 {
		t.Errorf("%s: %d pooled bytes not released", name, left)
	}
	if piece >= len(c.in) {
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(limit+allocSlack) {
			t.Errorf("%s: %d bytes allocated, more than %d", name, grew, limit+allocSlack)
		}
	}
}

// Every case against a real server over loopback, all of a table's
// connections at once: the session ends with the right reason
// (ReasonProtocol with the named cause, or ReasonPeerClosed), the handler
// got exactly the frames before the fault, SRMP replies are counted as
// unknown, a silent peer in the middle of a frame is closed by the clock,
// the server's counters add up, and nothing leaks (leakcheck).
func TestHostileFramesServer(t *testing.T) {
	leakcheck.Check(t)
	for _, tb := range frameTables() {
		t.Run(tb.name, func(t *testing.T) {
			t.Parallel()
			runServerTable(t, tb)
		})
	}
}

func runServerTable(t *testing.T, tb frameTable) {
	type end struct {
		err     error
		sizes   []int
		unknown uint64
	}
	var mu sync.Mutex
	ends := map[string]chan end{} // by the peer's address
	endOf := func(addr string) chan end {
		mu.Lock()
		defer mu.Unlock()
		ch := ends[addr]
		if ch == nil {
			ch = make(chan end, 1)
			ends[addr] = ch
		}
		return ch
	}
	srv, addr := serveCfg(t, "tcp", transport.Config{}, codec.Options{
		Pipeline: codec.NewPipeline(tb.stage),
		// OnOpen, Handler and OnClose run on the connection's reading
		// goroutine: its list of sizes needs no lock.
		OnOpen: func(c *codec.Conn) { c.SetState(new([]int)) },
		Handler: func(c *codec.Conn, msg any) {
			s := c.State().(*[]int)
			*s = append(*s, tb.size(msg))
		},
		OnClose: func(c *codec.Conn, err error) {
			endOf(c.Session().RemoteAddr().String()) <- end{err, *c.State().(*[]int), c.Stats().Unknown}
		},
	})
	var wg sync.WaitGroup
	protocol, peer := 0, 0
	for _, c := range tb.cases {
		if c.want != nil {
			protocol++
		} else {
			peer++
		}
		wg.Go(func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			ch := endOf(conn.LocalAddr().String())
			conn.Write(c.in) // fails if the server has refused what it read already: no matter
			if !c.hold {
				conn.(*net.TCPConn).CloseWrite()
			}
			var e end
			select {
			case e = <-ch:
			case <-time.After(10 * time.Second):
				t.Errorf("%s: connection still open after 10 s", c.name)
				return
			}
			var ce *transport.CloseError
			want := transport.ReasonPeerClosed
			if c.want != nil {
				want = transport.ReasonProtocol
			}
			if !errors.As(e.err, &ce) || ce.Reason != want || (c.want != nil && !errors.Is(e.err, c.want)) {
				t.Errorf("%s: ended with %v, want %v (%v)", c.name, e.err, want, c.want)
			}
			if !slices.Equal(e.sizes, c.sizes) && !(len(e.sizes) == 0 && len(c.sizes) == 0) {
				t.Errorf("%s: handler got payloads of %v bytes, want %v", c.name, e.sizes, c.sizes)
			}
			if e.unknown != c.unknown {
				t.Errorf("%s: %d unknown replies, want %d", c.name, e.unknown, c.unknown)
			}
		})
	}
	wg.Wait()
	st := srv.Transport().Stats()
	if st.Accepted != uint64(len(tb.cases)) || st.Active != 0 ||
		st.Closed[transport.ReasonProtocol] != uint64(protocol) || st.Closed[transport.ReasonPeerClosed] != uint64(peer) {
		t.Errorf("stats: %d accepted, %d active, %d protocol, %d peer-closed; want %d, 0, %d, %d",
			st.Accepted, st.Active, st.Closed[transport.ReasonProtocol], st.Closed[transport.ReasonPeerClosed], len(tb.cases), protocol, peer)
	}
}
