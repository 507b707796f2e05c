package rpcport_test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// Issue 26 F2 at scale: many SRMP sessions, some of which never read, and
// a hundred PushAll of 4 KiB. A push never waits on a peer: no PushAll
// takes half a WriteTimeout (the old code waited up to one per
// non-reader), every reader gets every push in order, and each non-reader
// is closed by its own limit as a slow consumer (small send queues and
// socket buffers here, so that 400 KiB of pushes pass them). 2,000
// sessions of which 100 never read in a full-size run.
func TestPushAllPastClientsThatDoNotRead(t *testing.T) {
	sessions := size(500, 100, 2000)
	deaf := sessions / 20
	const pushes = 100
	writeTimeout := 5 * time.Second
	cfg := rpc.Config{Transport: transport.Config{
		MaxConnsPerIP:    sessions + 64, // every session comes from 127.0.0.1
		SendQueueBytes:   64 << 10,
		SocketSendBuffer: 16 << 10,
		WriteTimeout:     writeTimeout,
	}}
	type note struct {
		N   int
		Pad string
	}
	pad := strings.Repeat("p", 4000)
	want := make([][]byte, pushes)
	for k := range want {
		want[k] = request(t, "Note/Seq", note{k, pad})
	}
	r := attack(t, cfg, nil)
	closed0 := r.srv.Transport().Stats().Closed
	rcs := r.dialMany(sessions, 50)
	var wg sync.WaitGroup
	var got atomic.Int64
	read := make([]atomic.Int64, sessions) // pushes each reader has read
	for i, rc := range rcs {
		if i < deaf {
			rc.c.(*net.TCPConn).SetReadBuffer(16 << 10)
		}
		if err := rc.serves(t); err != nil { // SRMP spoken: pushes go to it
			t.Fatal(err)
		}
		if i < deaf {
			continue // never reads again
		}
		wg.Go(func() {
			for k := range pushes {
				f, err := rc.readFrame()
				switch {
				case err != nil:
					t.Errorf("reader %d, push %d: %v", i, k, err)
					return
				case f.b0 != b0OneWay || !bytes.Equal(f.payload, want[k]):
					t.Errorf("reader %d, push %d: got %02X %.40q", i, k, f.b0, f.payload)
					return
				}
				got.Add(1)
				read[i].Store(int64(k + 1))
			}
		})
	}
	// The pushes keep at most readerLag ahead of the slowest reader (64 KiB,
	// half what Enqueue lets a session hold): a reader's goroutine starved
	// on a loaded machine is not a slow consumer. The non-readers are not
	// waited for, and a PushAll is timed alone.
	const readerLag = 16
	behind := func(k int) bool {
		for i := deaf; i < sessions; i++ {
			if read[i].Load() < int64(k-readerLag) {
				return true
			}
		}
		return false
	}
	start := time.Now()
	var slowest time.Duration
	for k := range pushes {
		if behind(k) {
			waitFor(t, fmt.Sprintf("every reader within %d pushes of push %d", readerLag, k), func() bool { return !behind(k) })
		}
		ps := time.Now()
		n, err := r.srv.PushAll("Note/Seq", note{k, pad})
		if err != nil || n < sessions-deaf {
			t.Fatalf("PushAll %d: %d, %v; want at least the %d readers", k, n, err, sessions-deaf)
		}
		slowest = max(slowest, time.Since(ps))
	}
	took := time.Since(start)
	wg.Wait()
	delivered := time.Since(start)
	waitFor(t, fmt.Sprintf("the %d sessions that do not read closed as slow consumers", deaf), func() bool {
		return r.srv.Transport().Stats().Closed[transport.ReasonSlowConsumer]-closed0[transport.ReasonSlowConsumer] >= uint64(deaf)
	})
	deafClosed := time.Since(start)
	closed := r.srv.Transport().Stats().Closed
	if n := closed[transport.ReasonWriteTimeout] - closed0[transport.ReasonWriteTimeout]; n != 0 {
		t.Errorf("%d sessions closed by the write timeout: a push waited on one", n)
	}
	if slowest > writeTimeout/2 { // one that waited on a non-reader would take its WriteTimeout
		t.Errorf("a PushAll took %v: a push waited on a peer (WriteTimeout %v)", slowest, writeTimeout)
	}
	if n := got.Load(); n != int64((sessions-deaf)*pushes) {
		t.Errorf("%d pushes read, want %d", n, (sessions-deaf)*pushes)
	}
	f := r.end("pushes past clients that do not read (F2)", "%d sessions, %d never reading; %d PushAll of 4 KiB in %v (slowest %s); %d readers got all %d pushes in order by %v; the %d non-readers closed as slow consumers by %v; RSS %s",
		sessions, deaf, pushes, took.Round(time.Millisecond), ms(slowest), sessions-deaf, pushes, delivered.Round(time.Millisecond), deaf, deafClosed.Round(time.Millisecond), mib(rss()))
	// A session holds at most twice its send queue (128 KiB); a push is
	// encoded once for all, then framed and copied into each queue, and
	// the readers' frames are garbage in the same process: a bound well
	// short of every push in flight at once (400 KiB a session).
	r.heapBound(f, uint64(sessions)*(256<<10)+(64<<20))
}
