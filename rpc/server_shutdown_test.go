package rpc_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// inlineCall starts a call that runs on its connection's reading goroutine
// (path: an HTTP call, a Serial server's call, an Inline action's) and
// waits on its ctx, and returns once the handler has started.
func inlineCall(t *testing.T, path string) *rpc.Server {
	t.Helper()
	g := newGate(t, 1)
	srv, addr := startServer(t, rpc.Config{Serial: path == "serial"}, func(srv *rpc.Server) {
		var opts []rpc.HandleOption
		if path == "inline" {
			opts = append(opts, rpc.WithInline())
		}
		must(t, rpc.Handle(srv, "Slow/Ctx", func(ctx context.Context, _ struct{}) (int, error) {
			return 1, g.wait(ctx)
		}, opts...))
	})
	t.Cleanup(g.open) // before the server's Close (cleanups run last first), should Close hang
	rc := dialRaw(t, addr)
	if path == "http" {
		rc.write([]byte("GET /Slow/Ctx HTTP/1.1\r\nHost: x\r\n\r\n"))
	} else {
		rc.write(srmp(b0Request, 1, body(t, "Slow/Ctx", nil)))
	}
	recv(t, g.entered, "the handler to start")
	return srv
}

// Shutdown returns ctx's error once ctx ends, even while a handler on a
// reading goroutine waits on its own ctx: ctx's end cancels the calls'
// contexts before the transport waits for the reading goroutines.
func TestShutdownReturnsWhenCtxEndsDuringInlineHandler(t *testing.T) {
	for _, path := range []string{"http", "serial", "inline"} {
		t.Run(path, func(t *testing.T) {
			srv := inlineCall(t, path)
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				done <- srv.Shutdown(ctx)
			}()
			if err := recv(t, done, "Shutdown to return after its ctx ended"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown: %v, want DeadlineExceeded", err)
			}
		})
	}
}

// Close cancels the calls' contexts before it waits for the connections'
// goroutines, so a handler on a reading goroutine cannot hold it up.
func TestCloseEndsInlineHandler(t *testing.T) {
	for _, path := range []string{"http", "serial", "inline"} {
		t.Run(path, func(t *testing.T) {
			srv := inlineCall(t, path)
			done := make(chan error, 1)
			go func() { done <- srv.Close() }()
			recv(t, done, "Close to return")
		})
	}
}

// notYet is how long a test watches for an event that must not happen
// (a negative can only be watched for a while; the bug it guards against
// shows within microseconds).
const notYet = 200 * time.Millisecond

// Shutdown waits for every call running on a goroutine of its own, also
// one whose caller has hung up: it used to count only the calls of live
// connections, and returned with the handler still running (say, still
// writing to a database the application closes next).
func TestShutdownWaitsForCallsOfClosedConnections(t *testing.T) {
	g := newGate(t, 1)
	var running atomic.Int32
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Slow/Work", func(context.Context, struct{}) (int, error) {
			running.Add(1)
			defer running.Add(-1)
			return 1, g.wait(context.Background()) // work that does not watch ctx (a commit, say)
		}))
	})
	t.Cleanup(g.open)
	rc := dialRaw(t, addr)
	rc.write(srmp(b0Request, 1, body(t, "Slow/Work", nil)))
	recv(t, g.entered, "the handler to start")
	rc.c.Close() // the caller goes away
	waitFor(t, "the server to see the connection end", func() bool { return srv.Stats().Sessions == 0 })

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) with %d call(s) still running", err, running.Load())
	case <-time.After(notYet):
	}
	g.open()
	if err := recv(t, done, "Shutdown after the call ended"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := running.Load(); n != 0 {
		t.Fatalf("Shutdown returned with %d call(s) running", n)
	}
}

// The calls Close cuts short end unanswered: their callers see the
// connection end, as they would had the connections closed first, not a
// 500 saying the handler's context was cancelled (which Close, cancelling
// the contexts before it closes the connections, could write first).
func TestCloseLeavesCutCallsUnanswered(t *testing.T) {
	const conns, calls = 8, 32
	g := newGate(t, conns*calls)
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Slow/Ctx", func(ctx context.Context, _ struct{}) (int, error) {
			return 1, g.wait(ctx)
		}))
	})
	t.Cleanup(g.open)
	rcs := make([]*rawConn, conns)
	for i := range rcs {
		rcs[i] = dialRaw(t, addr)
		var in []byte
		for j := range calls {
			in = append(in, srmp(b0Request, byte(j+1), body(t, "Slow/Ctx", nil))...)
		}
		rcs[i].write(in)
	}
	for range conns * calls {
		recv(t, g.entered, "the handlers to start")
	}
	must(t, srv.Close())
	for _, rc := range rcs {
		rc.expectEOF()
	}
}
