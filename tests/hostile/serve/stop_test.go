package serve_test

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// Battery item 12: graceful and hard stop with 500 requests in flight.
const (
	inFlight = 500
	// hardStopBound is how soon after Close every call in flight must have
	// failed: "at once" (the handlers would never finish by themselves),
	// with room for a loaded machine and for the lifenet_debug build, which
	// poisons every released buffer byte by byte: ~2 s for the 1,000 read
	// buffers of the codec test under the race detector. The time measured
	// is logged.
	hardStopBound = 10 * time.Second
)

// gate holds the slow handlers until released, and tells when all of them
// have started.
type gate struct {
	open      chan struct{}
	allIn     chan struct{}
	entered   atomic.Int64
	cancelled atomic.Int64 // handlers that gave up because their connection ended
}

func newGate() *gate { return &gate{open: make(chan struct{}), allIn: make(chan struct{})} }

func (g *gate) enter() {
	if g.entered.Add(1) == inFlight {
		close(g.allIn)
	}
}

// stopClock is when the test began to stop the server, read by the
// goroutines waiting for the requests in flight (no other synchronisation
// links them to the test's goroutine).
type stopClock struct{ at atomic.Int64 }

func (c *stopClock) start() time.Time {
	now := time.Now()
	c.at.Store(now.UnixNano())
	return now
}

func (c *stopClock) since() time.Duration { return time.Duration(time.Now().UnixNano() - c.at.Load()) }

// outcome is how one request in flight ended.
type outcome struct {
	i     int
	n     int
	err   error
	after time.Duration // since the stop began
}

// collect takes the inFlight outcomes, failing the test after patience.
func collect(t *testing.T, ch <-chan outcome) []outcome {
	t.Helper()
	out := make([]outcome, 0, inFlight)
	for range inFlight {
		out = append(out, recv(t, ch, "a request in flight to end"))
	}
	return out
}

// releaseAndDrain opens the gate, checks that every request in flight
// (named what) completed with its own answer, and waits for Shutdown's
// result; it returns how many completed and how long Shutdown took after
// the release.
func releaseAndDrain(t *testing.T, g *gate, results <-chan outcome, shut <-chan error, what string) (done int, drained time.Duration, err error) {
	t.Helper()
	released := time.Now()
	close(g.open)
	for _, o := range collect(t, results) {
		if o.err != nil || o.n != o.i {
			t.Errorf("%s %d in flight: %d, %v; want %d", what, o.i, o.n, o.err, o.i)
			continue
		}
		done++
	}
	err = recv(t, shut, "Shutdown")
	return done, time.Since(released), err
}

// rpcSlowServer is an rpc server whose action Slow/Wait blocks until the
// gate opens (answering its argument) or its caller's connection ends,
// with inFlight calls of it running across four clients (an SRMP
// connection carries at most 255).
func rpcSlowServer(t *testing.T, g *gate) (*rpc.Server, string, []*rpc.Client, <-chan outcome, *stopClock) {
	t.Helper()
	srv, err := rpc.NewServer(rpc.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	err = errors.Join(
		rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, i int) (int, error) {
			g.enter()
			select {
			case <-g.open:
				return i, nil
			case <-ctx.Done():
				g.cancelled.Add(1)
				return 0, ctx.Err()
			}
		}),
		rpc.Handle(srv, "Quick/Echo", func(_ context.Context, i int) (int, error) { return i, nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := a.String()
	cls := make([]*rpc.Client, 4)
	for k := range cls {
		cls[k] = dialRPC(t, addr)
	}
	results := make(chan outcome, inFlight)
	stopped := new(stopClock)
	for i := range inFlight {
		go func() {
			n, err := rpc.Call[int](context.Background(), cls[i%len(cls)], "Slow/Wait", i)
			results <- outcome{i: i, n: n, err: err, after: stopped.since()}
		}()
	}
	recv(t, g.allIn, "500 calls in Slow/Wait")
	return srv, addr, cls, results, stopped
}

func dialRPC(t *testing.T, addr string) *rpc.Client {
	t.Helper()
	c, err := rpc.Dial(context.Background(), addr, rpc.ClientConfig{Timeout: patience})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rpc.Server.Shutdown with 500 calls running: calls that arrive meanwhile
// (on the open connections or on new ones) get a 503 naming
// rpc.ErrShutdown, all 500 complete with their results once released,
// Shutdown returns nil after them, and then nothing is accepted.
func TestRPCShutdownCompletesInFlight(t *testing.T) {
	leakcheck.Check(t)
	g := newGate()
	srv, addr, cls, results, stopped := rpcSlowServer(t, g)

	stopped.start()
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	var err error
	waitFor(t, "a call refused by Shutdown", func() bool {
		_, err = rpc.Call[int](context.Background(), cls[0], "Quick/Echo", 1)
		return err != nil
	})
	if !isShutdownReply(err) {
		t.Fatalf("a call during Shutdown: %v; want an APIError 503 naming ErrShutdown", err)
	}
	late := dialRPC(t, addr) // a new connection during the wait is served only a 503
	_, lateErr := rpc.Call[int](context.Background(), late, "Quick/Echo", 2)
	if !isShutdownReply(lateErr) {
		t.Errorf("a call on a connection made during Shutdown: %v; want a 503", lateErr)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with %d calls running", err, inFlight)
	default:
	}

	done, drained, err := releaseAndDrain(t, g, results, shut, "call")
	_, after := rpc.Call[int](context.Background(), cls[1], "Quick/Echo", 3)
	t.Logf("rpc Shutdown: %d of %d calls in flight completed; refused meanwhile: %v; Shutdown returned %v %v after the release; a call after it: %v; cancelled handlers %d",
		done, inFlight, lateErr, err, drained.Round(time.Millisecond), after, g.cancelled.Load())
	if err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	// The client may not have noticed its connection's end yet: its call
	// then leaves and fails as pending (ErrConnClosed), else it finds no
	// server to reconnect to.
	if !errors.Is(after, codec.ErrConnClosed) && !errors.Is(after, rpc.ErrNoServer) || !refused(addr) {
		t.Errorf("after Shutdown a call returned %v, or a connection was accepted; want ErrConnClosed or ErrNoServer", after)
	}
	if g.cancelled.Load() != 0 {
		t.Errorf("%d handlers saw their context cancelled during a graceful Shutdown", g.cancelled.Load())
	}
}

// isShutdownReply reports whether err is Shutdown's refusal: a 503 error
// reply naming ErrShutdown.
func isShutdownReply(err error) bool {
	var ae *rpc.APIError
	return errors.As(err, &ae) && ae.Code == rpc.CodeUnavailable && ae.Message == rpc.ErrShutdown.Error()
}

// rpc.Server.Close with 500 calls running ends them at once: each fails
// with codec.ErrConnClosed, every action's context is cancelled, and the
// next call finds no server.
func TestRPCCloseEndsInFlight(t *testing.T) {
	leakcheck.Check(t)
	g := newGate()
	srv, _, cls, results, stopped := rpcSlowServer(t, g)

	stopped.start()
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closeTook := stopped.since()
	var slowest time.Duration
	for _, o := range collect(t, results) {
		slowest = max(slowest, o.after)
		if !errors.Is(o.err, codec.ErrConnClosed) {
			t.Errorf("call %d in flight after Close: %d, %v; want codec.ErrConnClosed", o.i, o.n, o.err)
		}
	}
	waitFor(t, "every action to see its context cancelled", func() bool { return g.cancelled.Load() == inFlight })
	cancelled := stopped.since()
	_, after := rpc.Call[int](context.Background(), cls[0], "Quick/Echo", 1)
	t.Logf("rpc Close: returned in %v; all %d calls in flight failed with ErrConnClosed within %v; all actions cancelled within %v; next call: %v",
		closeTook.Round(time.Microsecond), inFlight, slowest.Round(time.Microsecond), cancelled.Round(time.Microsecond), after)
	if slowest > hardStopBound {
		t.Errorf("the last call in flight failed %v after Close, want within %v", slowest, hardStopBound)
	}
	if !errors.Is(after, rpc.ErrNoServer) {
		t.Errorf("a call after Close: %v; want rpc.ErrNoServer", after)
	}
}

// codecSlowServer is a codec server whose handler blocks until the gate
// opens (then echoes) or, when hard is set, until its session has ended,
// with inFlight clients each waiting for one reply. A handler runs on its
// connection's reading goroutine, so 500 requests in flight take 500
// connections.
func codecSlowServer(t *testing.T, g *gate, hard bool) (*codec.Server, string, []*codec.Client, <-chan outcome, *stopClock) {
	t.Helper()
	var w *sessionWatch
	if hard {
		w = watchSessions(t)
	}
	srv, addr := startCodec(t, transport.Config{}, codec.Options{
		Pipeline: srmpPipeline(0),
		Handler: func(c *codec.Conn, msg any) {
			var ended <-chan struct{} // nil (never) unless hard
			if w != nil {
				ended = w.wait(c.Session())
			}
			g.enter()
			select {
			case <-g.open:
			case <-ended:
				g.cancelled.Add(1)
			}
			echo(c, msg) // after Close, to a closed session: dropped, and nothing may leak
		},
	}, "tcp")
	cls := make([]*codec.Client, inFlight)
	for k := range cls {
		cls[k] = dialCodec(t, "tcp", addr, transport.ClientConfig{}, codec.Options{Pipeline: srmpPipeline(0), Timeout: 2 * patience})
	}
	results := make(chan outcome, inFlight)
	stopped := new(stopClock)
	for i, c := range cls {
		go func() {
			r, err := c.RequestBytes(context.Background(), codec.FlagBinary, index8(i))
			o := outcome{i: i, n: -1, err: err}
			if err == nil {
				o.n = int(binary.BigEndian.Uint64(r.PayloadBytes()))
				r.Release()
			}
			o.after = stopped.since()
			results <- o
		}()
	}
	recv(t, g.allIn, "500 requests in the handler")
	return srv, addr, cls, results, stopped
}

// sessionWatch stands in for the cancellation a codec handler does not get
// (no context; its session's Done closes only after the handler returns):
// one goroutine looks every 5 ms at the sessions of the waiting handlers
// and wakes those whose session has ended.
type sessionWatch struct {
	mu    sync.Mutex
	waits map[*transport.Session]chan struct{}
}

// watchSessions starts a watch that stops when the test ends.
func watchSessions(t *testing.T) *sessionWatch {
	w := &sessionWatch{waits: make(map[*transport.Session]chan struct{})}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			w.mu.Lock()
			for s, ch := range w.waits {
				if s.Reason() != transport.ReasonNone {
					close(ch)
					delete(w.waits, s)
				}
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return w
}

// wait returns a channel closed once s has ended.
func (w *sessionWatch) wait(s *transport.Session) <-chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	w.waits[s] = ch
	w.mu.Unlock()
	return ch
}

// codec.Server.Shutdown with 500 handlers running: no new connection is
// accepted, a request sent meanwhile on a busy connection is not read
// (it fails with codec.ErrConnClosed), all 500 replies are written once
// the handlers return, and every connection closes with ReasonShutdown.
func TestCodecShutdownCompletesInFlight(t *testing.T) {
	leakcheck.Check(t)
	g := newGate()
	srv, addr, cls, results, stopped := codecSlowServer(t, g, false)

	stopped.start()
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	probes := 0 // connections a probe made before the listener closed
	waitFor(t, "the listener to close", func() bool {
		if refused(addr) {
			return true
		}
		probes++
		return false
	})
	second := make(chan error, 1)
	if err := cls[0].RequestBytesAsync(context.Background(), codec.FlagBinary, index8(-1), func(_ *codec.Message, err error) { second <- err }); err != nil {
		t.Fatalf("a second request on a busy connection: %v", err)
	}
	// Shutdown marks the sessions right after it closes the listener;
	// nothing shows when it is done, so give it time (it takes a few
	// microseconds a session). Shutdown must then still be waiting.
	time.Sleep(250 * time.Millisecond)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with %d handlers running", err, inFlight)
	default:
	}

	done, drained, err := releaseAndDrain(t, g, results, shut, "request")
	secondErr := recv(t, second, "the second request's end")
	st := srv.Transport().Stats()
	t.Logf("codec Shutdown: %d of %d requests in flight answered; Shutdown returned %v %v after the release; request sent during it: %v; accepted %d, closed with ReasonShutdown %d (probe connections before the listener closed: %d)",
		done, inFlight, err, drained.Round(time.Millisecond), secondErr, st.Accepted, st.Closed[transport.ReasonShutdown], probes)
	if err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if !errors.Is(secondErr, codec.ErrConnClosed) {
		t.Errorf("a request sent during Shutdown: %v; want codec.ErrConnClosed", secondErr)
	}
	// A probe that connected before the listener closed was accepted by
	// the server or not (the kernel completes connections before Accept);
	// one that was ends with ReasonShutdown or, having closed first,
	// ReasonPeerClosed.
	if n := st.Closed[transport.ReasonShutdown]; n < inFlight || n+st.Closed[transport.ReasonPeerClosed] != st.Accepted || st.Accepted > inFlight+uint64(probes) {
		t.Errorf("accepted %d, closed with ReasonShutdown %d, PeerClosed %d; want %d in flight + up to %d probes, those in flight closed by Shutdown",
			st.Accepted, n, st.Closed[transport.ReasonPeerClosed], inFlight, probes)
	}
}

// codec.Server.Close with 500 handlers running ends every connection at
// once: each request in flight fails with codec.ErrConnClosed; Close
// itself returns once the handlers have noticed and returned.
func TestCodecCloseEndsInFlight(t *testing.T) {
	leakcheck.Check(t)
	g := newGate()
	srv, _, _, results, stopped := codecSlowServer(t, g, true)

	stopped.start()
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closeTook := stopped.since()
	var slowest time.Duration
	for _, o := range collect(t, results) {
		slowest = max(slowest, o.after)
		if !errors.Is(o.err, codec.ErrConnClosed) {
			t.Errorf("request %d in flight after Close: %d, %v; want codec.ErrConnClosed", o.i, o.n, o.err)
		}
	}
	st := srv.Transport().Stats()
	t.Logf("codec Close: returned in %v (handlers learn of it within 5 ms); all %d requests in flight failed with ErrConnClosed within %v; handlers that saw the end %d; closed with ReasonShutdown %d",
		closeTook.Round(time.Microsecond), inFlight, slowest.Round(time.Microsecond), g.cancelled.Load(), st.Closed[transport.ReasonShutdown])
	if slowest > hardStopBound {
		t.Errorf("the last request in flight failed %v after Close, want within %v", slowest, hardStopBound)
	}
	if g.cancelled.Load() != inFlight || st.Closed[transport.ReasonShutdown] != inFlight {
		t.Errorf("%d handlers saw their session end, %d sessions closed with ReasonShutdown; want %d each",
			g.cancelled.Load(), st.Closed[transport.ReasonShutdown], inFlight)
	}
}
