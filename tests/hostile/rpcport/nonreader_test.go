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

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// nonReader is a way of asking for big replies and never reading them.
type nonReader struct {
	name string
	open func(rc *raw) error // once connected, before the requests
	reqs []byte              // written whole, never a byte read
}

// Clients that ask for big replies and never read them, over SRMP (echoes
// of 1 MiB and of 9 MiB), SRMP in WebSocket and HTTP, while the server pushes to every SRMP connection
// every 20 ms. The server holds a bounded amount for each (the heap is
// bounded, and back to its baseline after) and ends every non-reader: the
// reading goroutine, which writes its inline action's reply itself, waits
// in that write for WriteTimeout (the send queue behind it never fills,
// so SendStallTimeout does not judge it), unless the pushes fill the queue
// first (a slow consumer at twice SendQueueBytes) or the bytes it stopped
// reading expire. It never waits on one for a push: each PushAll returns
// at once and the clients that read get every push, in order. The
// bystanders are served throughout. WriteTimeout and SendStallTimeout are
// 3 s and 2 s (the defaults, 30 s and 10 s, in a full-size run).
func TestNonReadersOfBigReplies(t *testing.T) {
	per := size(10, 2, 50)
	readers := size(10, 4, 50)
	def := transport.DefaultConfig()
	writeTimeout := time.Duration(size(3, 3, int(def.WriteTimeout/time.Second))) * time.Second
	stall := time.Duration(size(2, 2, int(def.SendStallTimeout/time.Second))) * time.Second
	cfg := rpc.Config{Transport: transport.Config{WriteTimeout: writeTimeout, SendStallTimeout: stall}}
	queue := def.SendQueueBytes

	echo := srmpFrame(b0Request, 1, rawBody([]byte("Bench/EchoPacket"), bytes.Repeat([]byte("e"), 1<<20)))
	huge := srmpFrame(b0Request, 1, rawBody([]byte("Bench/EchoPacket"), bytes.Repeat([]byte("E"), 9<<20)))
	httpGet := []byte(httpReq("GET", "/Bench/EchoString?s="+strings.Repeat("h", 60<<10), nil, ""))
	shapes := []nonReader{
		{"SRMP, 32 echoes of 1 MiB", nil, bytes.Repeat(echo, 32)},
		{"SRMP, 4 echoes of 9 MiB", nil, bytes.Repeat(huge, 4)},
		{"WebSocket, 32 echoes of 1 MiB", (*raw).wsOpen, bytes.Repeat(wsMsg(echo), 32)},
		{"HTTP, 500 answers of 60 KiB", nil, bytes.Repeat(httpGet, 500)},
	}
	r := attack(t, cfg, nil)
	closed0 := r.srv.Transport().Stats().Closed

	// The clients that read their pushes: SRMP spoken once, then only
	// pushes, each checked in order.
	type note struct {
		N   int
		Pad string
	}
	pad := strings.Repeat("p", 4000)
	var pushed sync.WaitGroup
	stopPush := make(chan struct{})
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { close(stopPush) }); pushed.Wait() }
	t.Cleanup(stop)
	var pushWG sync.WaitGroup
	counts := make([]atomic.Int64, readers)
	for i, rc := range r.dialMany(readers, 20) {
		if err := rc.serves(t); err != nil {
			t.Fatal(err)
		}
		pushWG.Go(func() {
			for k := 0; ; k++ {
				f, err := rc.readFrame()
				if err != nil {
					return // the end of the test closes it
				}
				if f.b0 != b0OneWay || !bytes.Equal(f.payload, request(t, "Note/Seq", note{k, pad})) {
					t.Errorf("reader %d, push %d: got %02X %.40q", i, k, f.b0, f.payload)
					return
				}
				counts[i].Store(int64(k + 1))
			}
		})
	}

	// The non-readers: their sockets' receive buffers small, so that the
	// server's queues fill soon.
	var wg sync.WaitGroup
	var httpEnded atomic.Uint64
	total := 0
	for _, sh := range shapes {
		for _, rc := range r.dialMany(per, 20) {
			total++
			rc.c.(*net.TCPConn).SetReadBuffer(16 << 10)
			if sh.open != nil {
				if err := sh.open(rc); err != nil {
					t.Fatal(err)
				}
			}
			isHTTP := strings.HasPrefix(sh.name, "HTTP")
			wg.Go(func() {
				rc.write(sh.reqs) // until the server stops reading it, or closes it
				if isHTTP {
					for rc.write([]byte("x")) == nil { // its requests all sent: until the server closes it
						time.Sleep(100 * time.Millisecond)
					}
					httpEnded.Add(1) // net/http's connections are not the transport's: counted here
				}
			})
		}
	}

	// Pushes to every SRMP connection meanwhile, non-readers included.
	var slowest time.Duration
	pushes := 0
	pushed.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for k := 0; ; k++ {
			select {
			case <-stopPush:
				return
			case <-tick.C:
			}
			start := time.Now()
			if _, err := r.srv.PushAll("Note/Seq", note{k, pad}); err != nil {
				t.Errorf("PushAll %d: %v", k, err)
				return
			}
			slowest = max(slowest, time.Since(start))
			pushes = k + 1
		}
	})

	start := time.Now()
	ended := func() uint64 {
		c := r.srv.Transport().Stats().Closed
		var n uint64
		for _, reason := range []transport.Reason{transport.ReasonWriteTimeout, transport.ReasonSlowConsumer, transport.ReasonProtocol} {
			n += c[reason] - closed0[reason]
		}
		return n + httpEnded.Load()
	}
	testwait.For(t, writeTimeout+codec.DefaultExpire+patience, fmt.Sprintf("the %d non-readers ended", total), func() bool { return ended() >= uint64(total) })
	closedIn := time.Since(start)
	closed := r.srv.Transport().Stats().Closed
	stop()
	waitFor(t, "every push read", func() bool {
		for i := range counts {
			if counts[i].Load() < int64(pushes) {
				return false
			}
		}
		return true
	})
	wg.Wait()
	f := r.end("non-readers of big replies", "%d non-readers (%d each: %s), WriteTimeout %v, SendStallTimeout %v: all ended within %v (write timeout %d, slow consumer %d, protocol %d); %d PushAll of 4 KiB meanwhile, the slowest %s, %d readers got all of them in order",
		total, per, shapeNames(shapes), writeTimeout, stall, closedIn.Round(time.Millisecond),
		closed[transport.ReasonWriteTimeout]-closed0[transport.ReasonWriteTimeout], closed[transport.ReasonSlowConsumer]-closed0[transport.ReasonSlowConsumer],
		closed[transport.ReasonProtocol]-closed0[transport.ReasonProtocol], pushes, ms(slowest), readers)
	if bound := max(writeTimeout, codec.DefaultExpire) + 10*time.Second*slow(); closedIn > bound { // a write blocks once the socket buffers are full: seconds after the first request when many attack at once
		t.Errorf("the non-readers were ended after %v, past %v", closedIn, bound)
	}
	if slowest > writeTimeout/2 { // a push that waited on a non-reader would take its WriteTimeout
		t.Errorf("a PushAll took %v: a push waited on a peer", slowest)
	}
	// Each non-reader holds its send queue (a reply waits for room behind
	// it), the reply being built (a 404 names the action twice) and the
	// request being read; the attackers' own requests are in the baseline.
	r.heapBound(f, uint64(total)*uint64(2*queue+3*codec.DefaultMaxFrame))
}

func shapeNames(shapes []nonReader) string {
	s := make([]string, len(shapes))
	for i, sh := range shapes {
		s[i] = sh.name
	}
	return strings.Join(s, "; ")
}
