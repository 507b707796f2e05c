package rpcport_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// duplicatingProxy relays connections to target and sends every SRMP frame
// target answers twice: the copy right behind its original (lag 0), or
// lag frames later, until stop (or the end of the test).
func duplicatingProxy(t *testing.T, target string, lag int) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ln.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Go(func() { io.Copy(s, c); s.Close() })
			wg.Go(func() { duplicate(c, s, lag); c.Close() })
		}
	})
	return ln.Addr().String(), stop
}

// duplicate copies the SRMP frames of from to to, each twice.
func duplicate(to, from net.Conn, lag int) {
	br := bufio.NewReader(from)
	bw := bufio.NewWriterSize(to, 64<<10)
	var copies [][]byte
	for {
		f, err := readSRMP(br)
		if err != nil {
			return
		}
		b := srmpFrame(f.b0, f.seq, f.payload)
		bw.Write(b)
		copies = append(copies, b)
		if len(copies) > lag {
			bw.Write(copies[0])
			copies = copies[1:]
		}
		if br.Buffered() == 0 && bw.Flush() != nil {
			return
		}
	}
}

// dupRun is one round of calls through a duplicating proxy.
type dupRun struct {
	shape           string
	inFlight, calls int
	wrong, failed   int64
	unknown, reused uint64
	took            time.Duration
}

// Issue 26 F6 at scale: an rpc.Client calling through a proxy that sends
// every reply twice, the copy right behind it (to an inline echo) or 32
// replies later (to an echo that holds a quarter of the calls up to 2 ms,
// so that replies come out of order). At 64 calls in flight on one
// connection no call gets another's reply (each echoes its own payload)
// and none fails: a number is given out again only after the copy of its
// last reply has landed on nothing. At 255 in flight, where every number
// but one is taken, the wrong deliveries are counted, not asserted: eight
// bits are all SRMP carries.
func TestDuplicatedReplies(t *testing.T) {
	calls := size(5000, 1000, 5000)
	r := attack(t, rpc.Config{}, func(srv *rpc.Server) {
		handle(t, srv, "Dup/Echo", func(_ context.Context, s string) (string, error) {
			if rand.IntN(4) == 0 {
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			}
			return s, nil
		})
	})
	var runs []dupRun
	for _, sh := range []struct {
		name   string
		lag    int
		action string
	}{{"copy right behind", 0, "Bench/EchoString"}, {"copy 32 replies later, out of order", 32, "Dup/Echo"}} {
		for _, inFlight := range []int{64, 255} {
			proxy, stop := duplicatingProxy(t, r.addr, sh.lag)
			run := dupCalls(t, proxy, sh.action, inFlight, calls)
			stop()
			run.shape = sh.name
			runs = append(runs, run)
			if inFlight <= 64 && (run.wrong != 0 || run.failed != 0) {
				t.Errorf("%s, %d in flight: %d of %d calls got another call's reply, %d failed", sh.name, inFlight, run.wrong, calls, run.failed)
			}
			if run.unknown == 0 {
				t.Errorf("%s, %d in flight: no duplicate was dropped as unknown: the proxy sent none?", sh.name, inFlight)
			}
		}
	}
	var b []byte
	for _, run := range runs {
		b = fmt.Appendf(b, "%s at %d in flight: %d of %d wrong, %d failed, %d unknown replies dropped, %d numbers reused within a round trip, %v; ",
			run.shape, run.inFlight, run.wrong, run.calls, run.failed, run.unknown, run.reused, run.took.Round(time.Millisecond))
	}
	r.end("duplicated replies (F6)", "%s", b)
}

// dupCalls makes calls calls of action through addr on one connection,
// inFlight at a time, each with a payload of its own, and counts those
// answered with another's.
func dupCalls(t *testing.T, addr, action string, inFlight, calls int) dupRun {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cl, err := rpc.Dial(ctx, "tcp://"+addr, rpc.ClientConfig{Timeout: patience, Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	run := dupRun{inFlight: inFlight, calls: calls}
	var next atomic.Int64
	var wrong, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(calls) {
					return
				}
				want := "call " + strconv.FormatInt(i, 10)
				got, err := rpc.Call[string](ctx, cl, action, want)
				switch {
				case err != nil && !errors.Is(err, context.Canceled):
					failed.Add(1)
				case got != want:
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	run.took = time.Since(start)
	st := cl.Stats()
	run.wrong, run.failed, run.unknown, run.reused = wrong.Load(), failed.Load(), st.Unknown, st.Reused
	return run
}
