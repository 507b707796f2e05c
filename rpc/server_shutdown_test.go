package rpc_test

import (
	"context"
	"errors"
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
			opts = append(opts, rpc.Inline())
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
