package serve_test

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// Battery item 11: 10,000 requests, one in ten panicking.
const (
	panicRequests = 10000
	panicEvery    = 10 // request i panics when i%panicEvery == 0
	panicWant     = panicRequests / panicEvery
	panicWorkers  = 8
)

// panics reports whether request i is one of the panicking tenth.
func panics(i int) bool { return i%panicEvery == 0 }

// A codec.Server handler that panics ends its connection: the transport
// recovers the panic and closes the session with ReasonError and a
// *transport.PanicError as its cause (codec does not recover it). The
// request that panicked fails with codec.ErrConnClosed alone (it was sent,
// so it is not retried); the client reconnects (AutoReconnect), a request
// that meets the connection already gone fails with ErrNotSent as well and
// is sent again, and every other request is served.
func TestCodecHandlerPanics(t *testing.T) {
	leakcheck.Check(t)
	var closedByPanic, closedOther atomic.Int64
	srv, addr := startCodec(t, transport.Config{}, codec.Options{
		Pipeline: srmpPipeline(0),
		Handler: func(c *codec.Conn, msg any) {
			m := msg.(*codec.Message)
			if i := int(binary.BigEndian.Uint64(m.PayloadBytes())); panics(i) {
				panic(i)
			}
			echo(c, msg)
		},
		OnClose: func(_ *codec.Conn, err error) {
			var pe *transport.PanicError
			if errors.As(err, &pe) {
				closedByPanic.Add(1)
			} else {
				closedOther.Add(1)
			}
		},
	}, "tcp")

	var served, panicked, resent atomic.Int64
	var mu sync.Mutex
	var failures []error
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range panicWorkers {
		c := dialCodec(t, "tcp", addr,
			transport.ClientConfig{AutoReconnect: true, ReconnectDelay: time.Millisecond, ReconnectMax: 20 * time.Millisecond},
			codec.Options{Pipeline: srmpPipeline(0), Timeout: patience})
		wg.Go(func() {
			for i := w; i < panicRequests; i += panicWorkers {
				deadline := time.Now().Add(patience)
				for {
					r, err := c.RequestBytes(context.Background(), codec.FlagBinary, index8(i))
					if errors.Is(err, codec.ErrNotSent) && time.Now().Before(deadline) {
						resent.Add(1) // the connection had gone: it never left, send it again
						time.Sleep(time.Millisecond)
						continue
					}
					switch {
					case err == nil:
						got := binary.BigEndian.Uint64(r.PayloadBytes())
						r.Release()
						if got != uint64(i) || panics(i) {
							fail(errors.New("a wrong reply, or a reply to a request whose handler panicked"))
						} else {
							served.Add(1)
						}
					case panics(i) && errors.Is(err, codec.ErrConnClosed) && !errors.Is(err, codec.ErrNotSent):
						panicked.Add(1)
					default:
						fail(err)
					}
					break
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	waitFor(t, "every panicking connection to be closed", func() bool { return closedByPanic.Load() >= panicWant })
	st := srv.Transport().Stats()
	t.Logf("codec: %d requests in %v by %d clients: %d served, %d failed with ErrConnClosed after their handler panicked, %d resent (ErrNotSent while reconnecting), %d other failures",
		panicRequests, took.Round(time.Millisecond), panicWorkers, served.Load(), panicked.Load(), resent.Load(), len(failures))
	t.Logf("codec server: %d connections accepted, %d closed by a *transport.PanicError (ReasonError %d), %d closed otherwise",
		st.Accepted, closedByPanic.Load(), st.Closed[transport.ReasonError], closedOther.Load())
	if len(failures) > 0 {
		t.Fatalf("%d requests failed, first: %v", len(failures), failures[0])
	}
	if served.Load() != panicRequests-panicWant || panicked.Load() != panicWant {
		t.Errorf("served %d, failed by a panic %d; want %d and %d", served.Load(), panicked.Load(), panicRequests-panicWant, panicWant)
	}
	if closedByPanic.Load() != panicWant || st.Closed[transport.ReasonError] != panicWant {
		t.Errorf("%d connections closed by a PanicError (ReasonError %d), want %d", closedByPanic.Load(), st.Closed[transport.ReasonError], panicWant)
	}
	// One connection per client, and one more after each panic: the last
	// reconnections may still be under way.
	if st.Accepted > panicWorkers+panicWant || st.Accepted < panicWant {
		t.Errorf("%d connections accepted, want %d to %d", st.Accepted, panicWant, panicWorkers+panicWant)
	}
}

// An rpc.Server action that panics is answered with a 500 and counted in
// Stats().Panics; its connection stays open and every other call is
// served, whether the action runs on a goroutine of its own or inline on
// the reading goroutine.
func TestRPCActionPanics(t *testing.T) {
	leakcheck.Check(t)
	srv, err := rpc.NewServer(rpc.Config{Log: slog.New(slog.DiscardHandler)}) // 1,000 stacks are no news
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	maybe := func(_ context.Context, i int) (int, error) {
		if panics(i) {
			panic(i)
		}
		return i, nil
	}
	for _, err := range []error{
		rpc.Handle(srv, "Bad/Maybe", maybe),
		rpc.Handle(srv, "Bad/MaybeInline", maybe, rpc.WithInline()),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const clients, callers = 4, 32
	cls := make([]*rpc.Client, clients)
	for k := range cls {
		c, err := rpc.Dial(context.Background(), a.String(), rpc.ClientConfig{Timeout: patience})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cls[k] = c
	}

	var served, panicked atomic.Int64
	var mu sync.Mutex
	var failures []error
	start := time.Now()
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			c := cls[g%clients]
			for i := g; i < panicRequests; i += callers {
				action := "Bad/Maybe"
				if (i/panicEvery)%2 == 1 { // alternate blocks of ten: half the panics each way
					action = "Bad/MaybeInline"
				}
				n, err := rpc.Call[int](context.Background(), c, action, i)
				var ae *rpc.APIError
				switch {
				case err == nil && n == i && !panics(i):
					served.Add(1)
				case panics(i) && errors.As(err, &ae) && ae.Code == rpc.CodeInternal:
					panicked.Add(1)
				default:
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	st := srv.Stats()
	t.Logf("rpc: %d calls in %v by %d callers on %d connections: %d served, %d answered 500; Stats: Panics %d, Dropped %d, Sessions %d",
		panicRequests, took.Round(time.Millisecond), callers, clients, served.Load(), panicked.Load(), st.Panics, st.Dropped, st.Sessions)
	if len(failures) > 0 {
		t.Fatalf("%d calls failed, first: %v", len(failures), failures[0])
	}
	if served.Load() != panicRequests-panicWant || panicked.Load() != panicWant {
		t.Errorf("served %d, answered 500 %d; want %d and %d", served.Load(), panicked.Load(), panicRequests-panicWant, panicWant)
	}
	if st.Panics != panicWant || st.Dropped != 0 || st.Sessions != clients {
		t.Errorf("Stats %+v; want Panics %d, Dropped 0, Sessions %d (no connection lost to a panic)", st, panicWant, clients)
	}
}

// What one panic costs a pipelining codec client: the connection, so every
// request behind the panicking one fails with codec.ErrConnClosed (pending
// when the connection ended: not retried). The replies to the requests
// handled before it, in the same read, still leave: the transport flushes
// what a read's handlers queued even when one panics, and on the direct
// path (the framing stage alone) codec hands the read's buffered replies
// to the session before the panic goes on. Both paths are checked.
func TestCodecHandlerPanicEndsThePipeline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pipeline *codec.Pipeline
	}{
		{"direct", srmpPipeline(0)},
		{"chain", codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}), func() codec.Handler { return passThrough{} })},
	} {
		t.Run(tc.name, func(t *testing.T) { panicInPipeline(t, tc.pipeline) })
	}
}

// passThrough is an application stage that hands everything on: it takes
// the connection off codec's direct read path.
type passThrough struct{}

func (passThrough) Read(c *codec.HandlerContext, msg any) error  { return c.FireRead(msg) }
func (passThrough) Write(c *codec.HandlerContext, msg any) error { return c.FireWrite(msg) }

func panicInPipeline(t *testing.T, pipeline *codec.Pipeline) {
	leakcheck.Check(t)
	const requests, bad = 200, 100
	_, addr := startCodec(t, transport.Config{}, codec.Options{
		Pipeline: pipeline,
		Handler: func(c *codec.Conn, msg any) {
			if binary.BigEndian.Uint64(msg.(*codec.Message).PayloadBytes()) == bad {
				panic("bad request")
			}
			echo(c, msg)
		},
	}, "tcp")
	c := dialCodec(t, "tcp", addr, transport.ClientConfig{}, codec.Options{Pipeline: srmpPipeline(0), Timeout: patience})
	results := make(chan outcome, requests)
	err := c.Batch(func() { // one write: the server reads them together
		for i := range requests {
			err := c.RequestBytesAsync(context.Background(), codec.FlagBinary, index8(i), func(r *codec.Message, err error) {
				o := outcome{i: i, n: -1, err: err}
				if err == nil {
					o.n = int(binary.BigEndian.Uint64(r.PayloadBytes()))
				}
				results <- o
			})
			if err != nil {
				t.Errorf("request %d not sent: %v", i, err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	answered, lostBefore, lostAfter := 0, 0, 0
	for range requests {
		o := recv(t, results, "a pipelined request's end")
		lost := errors.Is(o.err, codec.ErrConnClosed) && !errors.Is(o.err, codec.ErrNotSent)
		switch {
		case o.i < bad && o.err == nil && o.n == o.i:
			answered++
		case o.i < bad && lost:
			lostBefore++
		case o.i >= bad && lost:
			lostAfter++
		default:
			t.Errorf("request %d: %d, %v; want its reply before %d, ErrConnClosed from it on", o.i, o.n, o.err, bad)
		}
	}
	t.Logf("codec pipeline of %d with request %d panicking: %d answered, %d handled before the panic but unanswered, %d lost behind it",
		requests, bad, answered, lostBefore, lostAfter)
	if lostBefore > 0 {
		t.Errorf("the replies to %d requests handled before the panic were dropped with the connection", lostBefore)
	}
}
