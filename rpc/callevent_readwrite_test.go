package rpc_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// A CallEvent's times run from the socket's read to the reply's write. Two
// requests in one write to an inline action that sleeps: the second was
// read with the first, so its Wait takes in the first's handler; the
// first's reply leaves with the second's, when the read's frames are all
// handled, so its Written takes in the second's handler too.
func TestCallEventRunsFromTheReadToTheWrite(t *testing.T) {
	const nap = 50 * time.Millisecond
	var log eventLog
	_, addr := startServer(t, rpc.Config{OnCallDone: log.add}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "T/Nap", func(context.Context, struct{}) (int, error) {
			time.Sleep(nap)
			return 1, nil
		}, rpc.WithInline()))
	})
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	req := srmpRequest("T/Nap")
	_, err = c.Write(append(append([]byte(nil), req...), req...)) // one write, one read
	must(t, err)
	waitFor(t, "both calls' events", func() bool { return len(log.all()) == 2 }) // reported after the replies' write
	evs := log.all()
	first, second := evs[0], evs[1]
	if first.Duration < nap || second.Duration < nap {
		t.Fatalf("handlers' Durations %v and %v, want each at least %v", first.Duration, second.Duration, nap)
	}
	if second.Wait < nap {
		t.Errorf("second call's Wait %v: want the first's handler (%v) in it, since both came in one read", second.Wait, nap)
	}
	if first.Written < 2*nap {
		t.Errorf("first call's Written %v: want both handlers (%v) in it, since its reply left with the second's", first.Written, 2*nap)
	}
	if second.Written < second.Wait+second.Duration {
		t.Errorf("second call: Written %v < Wait %v + Duration %v", second.Written, second.Wait, second.Duration)
	}
}
