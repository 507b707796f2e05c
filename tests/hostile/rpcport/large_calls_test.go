package rpcport_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
)

// Issue 26 F3 at scale: several rpc.Clients (SRMP, and one over
// WebSocket), each shared by eight goroutines calling with 2 MiB four
// times (16 MiB queued at once against the default 4 MiB of send queue)
// and one call the size of MaxFrame beside them: every call succeeds with
// its own bytes back, on both ends of every connection a caller waits for
// room instead of failing it, and no connection is closed as a slow
// consumer.
func TestConcurrentLargeCalls(t *testing.T) {
	clients := size(3, 1, 8)
	calls := size(4, 1, 4)
	const goroutines, n = 8, 2 << 20
	big := codec.DefaultMaxFrame - 1<<10 // room for the header and the action's name
	payloads := make([][]byte, goroutines)
	for g := range payloads {
		payloads[g] = bytes.Repeat([]byte{byte('a' + g)}, n)
	}
	bigPayload := bytes.Repeat([]byte{'B'}, big)
	r := attack(t, rpc.Config{}, nil)
	var wg sync.WaitGroup
	var ok atomic.Int64
	errs := make(chan error, clients*(goroutines*calls+1))
	var mu sync.Mutex
	took := map[string]time.Duration{}
	var cls []*rpc.Client
	for c := range clients {
		scheme := "tcp://"
		if c == clients-1 && clients > 1 {
			scheme = "ws://"
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		cl, err := rpc.Dial(ctx, scheme+r.addr, rpc.ClientConfig{Timeout: patience})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		cls = append(cls, cl)
		t.Cleanup(func() { cl.Close() }) // (a test that fails first)
		start := time.Now()
		call := func(data []byte) {
			got, err := rpc.Call[[]byte](context.Background(), cl, "Bench/EchoPacket", data)
			switch {
			case err != nil:
				errs <- fmt.Errorf("%s, a call of %d bytes: %w", scheme, len(data), err)
			case !bytes.Equal(got, data):
				errs <- fmt.Errorf("%s, a call of %d bytes got %d bytes back, not its own", scheme, len(data), len(got))
			default:
				ok.Add(1)
			}
		}
		var cwg sync.WaitGroup
		for g := range goroutines {
			cwg.Go(func() {
				for range calls {
					call(payloads[g])
				}
			})
		}
		cwg.Go(func() { call(bigPayload) })
		wg.Go(func() {
			cwg.Wait()
			mu.Lock()
			took[scheme] = max(took[scheme], time.Since(start))
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, cl := range cls {
		cl.Close()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := r.srv.Transport().Stats()
	if n := st.SendQueueOverflows; n != 0 {
		t.Errorf("%d connections closed as slow consumers", n)
	}
	f := r.end("concurrent large calls (F3)", "%d clients (%d over WebSocket) × (%d goroutines × %d calls of 2 MiB + one of %d B): %d of %d succeeded, the slowest client's in %v (over WebSocket %v), no slow-consumer close",
		clients, min(clients-1, 1), goroutines, calls, big, ok.Load(), clients*(goroutines*calls+1), took["tcp://"].Round(time.Millisecond), took["ws://"].Round(time.Millisecond))
	// Each client has 8 calls of 2 MiB and one of MaxFrame in flight, each
	// copied about six times on its way (encoded, framed on the server,
	// the reply built and written, framed and decoded on the client), and
	// the collector lets garbage reach the live heap's size again.
	r.heapBound(f, uint64(clients)*uint64(goroutines*n+big)*12)
}
