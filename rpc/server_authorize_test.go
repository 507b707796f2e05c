package rpc_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// countLog is a slog.Handler that counts the records at Error level.
type countLog struct{ errors atomic.Int32 }

func (*countLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *countLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.errors.Add(1)
	}
	return nil
}
func (h *countLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countLog) WithGroup(string) slog.Handler      { return h }

// A panic in Config.Authorize is the application's bug like a handler's:
// the call gets a 500, the panic is counted and logged once, and the
// server (and, but for an SSE stream, which always ends its connection,
// the connection) keeps serving. It used to escape a spawned call's
// goroutine and kill the process.
func TestAuthorizePanicIsA500(t *testing.T) {
	log := &countLog{}
	cfg := rpc.Config{Log: slog.New(log), Authorize: func(_ context.Context, _ *rpc.Session, action string) error {
		if strings.HasPrefix(action, "Guarded/") {
			panic("auth hook bug")
		}
		return nil
	}}
	srv, addr := startServer(t, cfg, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Guarded/Call", func(context.Context, struct{}) (int, error) { return 1, nil }))
		must(t, rpc.Handle(srv, "Guarded/Inline", func(context.Context, struct{}) (int, error) { return 1, nil }, rpc.WithInline()))
		must(t, rpc.HandleStream(srv, "Guarded/Stream", countTo))
	})
	panics := uint64(0)
	expectPanic := func(what string) {
		t.Helper()
		panics++
		if got := srv.Stats().Panics; got != panics {
			t.Errorf("%s: Panics %d, want %d", what, got, panics)
		}
		if got := log.errors.Load(); got != int32(panics) {
			t.Errorf("%s: %d error logs, want %d (one per panic)", what, got, panics)
		}
	}
	ctx := context.Background()
	cl := dialClient(t, addr, rpc.ClientConfig{})
	for _, action := range []string{"Guarded/Call", "Guarded/Inline"} {
		if _, err := rpc.Call[int](ctx, cl, action, nil); apiCode(err) != 500 {
			t.Fatalf("%s: %v, want APIError 500", action, err)
		}
		expectPanic(action)
	}
	for _, err := range rpc.Stream[int](ctx, cl, "Guarded/Stream", 2) {
		if apiCode(err) != 500 {
			t.Fatalf("Guarded/Stream: %v, want APIError 500", err)
		}
	}
	expectPanic("Guarded/Stream")
	if n, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil || n != 42 {
		t.Fatalf("a call after the panics: %d, %v", n, err)
	}

	rc := dialRaw(t, addr)
	if _, b := rc.httpDo("GET /Guarded/Call HTTP/1.1\r\nHost: x\r\n\r\n"); !strings.Contains(b, `"code":500`) {
		t.Fatalf("HTTP Guarded/Call: %s, want code 500", b)
	}
	expectPanic("HTTP Guarded/Call")
	if _, b := rc.httpDo("GET /Guarded/Stream?n=2 HTTP/1.1\r\nHost: x\r\n\r\n"); !strings.Contains(b, `"code":500`) {
		t.Fatalf("HTTP Guarded/Stream: %s, want an event with code 500", b)
	}
	expectPanic("HTTP Guarded/Stream")
}

type ApiController struct{}

func (ApiController) DropTables() string { return "dropped" }

// Authorize guards every action but the server's own Api/All and Api/Info:
// an application action whose name starts with Api/ (a controller named
// ApiController, Handle("Api/…")) is guarded too. It used to be skipped by
// its name's prefix.
func TestAuthorizeGuardsApplicationApiActions(t *testing.T) {
	cfg := rpc.Config{Authorize: func(context.Context, *rpc.Session, string) error {
		return rpc.NewError(403, "forbidden")
	}}
	_, addr := startServer(t, cfg, func(srv *rpc.Server) {
		must(t, srv.Register(ApiController{}))
		must(t, rpc.Handle(srv, "Api/Admin", func(context.Context, struct{}) (string, error) { return "admin", nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	for _, action := range []string{"Api/DropTables", "Api/Admin"} {
		if got, err := rpc.Call[string](ctx, cl, action, nil); apiCode(err) != 403 {
			t.Errorf("%s: %q, %v; want 403 from Authorize", action, got, err)
		}
	}
	if _, err := rpc.Call[[]string](ctx, cl, "Api/All", nil); err != nil {
		t.Errorf("Api/All: %v, want it served without Authorize", err)
	}
	if _, err := rpc.Call[map[string]any](ctx, cl, "Api/Info", nil); err != nil {
		t.Errorf("Api/Info: %v, want it served without Authorize", err)
	}
}
