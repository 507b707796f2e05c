package rpc_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/internal/logattr/logtest"
	"github.com/lifenet/lifenet/rpc"
)

const (
	msgSessionOpened = "transport: session opened"
	msgPanic         = "rpc: handler panic"
	msgHidden        = "rpc: handler error (the caller gets its code's generic text)"
	msgTooLarge      = "rpc: reply too large"
	msgDropped       = "rpc: request dropped"
	msgSuppressed    = "rpc: log lines suppressed"
)

// checkCallAttrs fails t unless rec names the call of action by a
// session over protocol: session (uint64), remote (a string, the
// loopback peer's address), protocol.
func checkCallAttrs(t *testing.T, rec logtest.Record, action, protocol string) {
	t.Helper()
	if got := rec.Attrs[logattr.Action].String(); got != action {
		t.Errorf("%s: action %q, want %q", rec.Message, got, action)
	}
	if v, ok := rec.Attrs[logattr.Session]; !ok || v.Kind() != slog.KindUint64 || v.Uint64() == 0 {
		t.Errorf("%s: session %v, want the session's ID", rec.Message, v)
	}
	if v := rec.Attrs[logattr.Remote]; v.Kind() != slog.KindString || !strings.HasPrefix(v.String(), "127.0.0.1:") {
		t.Errorf("%s: remote %v (%v), want the peer's address as a string", rec.Message, v, v.Kind())
	}
	if got := rec.Attrs[logattr.Protocol].String(); got != protocol {
		t.Errorf("%s: protocol %q, want %q", rec.Message, got, protocol)
	}
}

// The server hands Config.Log to its transport (a session's lines), and
// a client's ClientConfig.Log reaches its own.
func TestLogReachesTransport(t *testing.T) {
	srvRec, srvLog := logtest.New(slog.LevelDebug)
	_, addr := startServer(t, rpc.Config{Log: srvLog}, func(s *rpc.Server) { stdActions(t, s) })
	clRec, clLog := logtest.New(slog.LevelDebug)
	cl := dialClient(t, addr, rpc.ClientConfig{Log: clLog})
	if _, err := rpc.Call[int32](testCtx(t), cl, "Bench/NoArg", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server's session line", func() bool { return len(srvRec.Find(slog.LevelDebug, msgSessionOpened)) == 1 })
	if n := len(clRec.Find(slog.LevelDebug, msgSessionOpened)); n != 1 {
		t.Errorf("the client's log has %d %q lines, want 1 (its connection)", n, msgSessionOpened)
	}
}

// A handler's panic is an Error line naming the call (action, session,
// remote, protocol) with the panic and its stack; past the burst the
// lines are held back and counted in one summary when the server closes.
func TestPanicLineRateLimited(t *testing.T) {
	rec, log := logtest.New(slog.LevelWarn) // the lines past the burst go to Debug: not kept
	srv, addr := startServer(t, rpc.Config{Log: log}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Test/Panic", func(context.Context, struct{}) (int, error) { panic("boom") }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{Log: quietLog()})
	const calls = logattr.Burst + 5
	for range calls {
		if _, err := rpc.Call[int](testCtx(t), cl, "Test/Panic", nil); apiCode(err) != rpc.CodeInternal {
			t.Fatalf("a panicking call: %v, want a 500", err)
		}
	}
	lines := rec.Find(slog.LevelError, msgPanic)
	if len(lines) != logattr.Burst {
		t.Fatalf("%d panic lines for %d panics, want the burst of %d", len(lines), calls, logattr.Burst)
	}
	checkCallAttrs(t, lines[0], "Test/Panic", "srmp")
	if got := lines[0].Attrs[logattr.Panic].String(); got != "boom" {
		t.Errorf("panic %q", got)
	}
	if st := lines[0].Attrs[logattr.Stack].String(); !strings.Contains(st, "panic") {
		t.Errorf("stack %q does not show the panic", st)
	}
	if n := srv.Stats().Panics; n != calls {
		t.Errorf("Stats().Panics %d, want %d: every panic counts", n, calls)
	}
	srv.Close()
	sum := rec.Find(slog.LevelError, msgSuppressed)
	if len(sum) != 1 || sum[0].Attrs[logattr.Suppressed].Uint64() != calls-logattr.Burst || sum[0].Attrs[logattr.Line].String() != msgPanic {
		t.Fatalf("summaries at Close %+v, want one counting %d %q lines", sum, calls-logattr.Burst, msgPanic)
	}
}

// A call through Process has no peer: its panic line names the action
// alone.
func TestPanicLineOfProcess(t *testing.T) {
	rec, log := logtest.New(slog.LevelWarn)
	srv, _ := startServer(t, rpc.Config{Log: log}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Test/Panic", func(context.Context, struct{}) (int, error) { panic("boom") }))
	})
	if _, isErr, _ := srv.Process(context.Background(), body(t, "Test/Panic", nil), nil); !isErr {
		t.Fatal("a panicking call answered without an error")
	}
	lines := rec.Find(slog.LevelError, msgPanic)
	if len(lines) != 1 || lines[0].Attrs[logattr.Action].String() != "Test/Panic" || lines[0].Has(logattr.Session) || lines[0].Has(logattr.Remote) {
		t.Fatalf("lines %+v, want one naming the action, without a session", lines)
	}
}

// A hidden handler error and a reply past MaxFrame are Warn lines naming
// the call; an HTTP caller's protocol is http.
func TestHiddenErrorAndTooLargeLines(t *testing.T) {
	rec, log := logtest.New(slog.LevelWarn)
	cfg := rpc.Config{Log: log}
	cfg.Framer.MaxFrame = 4 << 10
	_, addr := startServer(t, cfg, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Test/Hidden", func(context.Context, struct{}) (int, error) { return 0, errors.New("db at 10.0.0.7 down") }))
		must(t, rpc.Handle(s, "Test/Big", func(context.Context, struct{}) (string, error) { return strings.Repeat("x", 8<<10), nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{Log: quietLog()})
	if _, err := rpc.Call[int](testCtx(t), cl, "Test/Hidden", nil); apiCode(err) != rpc.CodeInternal {
		t.Fatalf("Test/Hidden: %v", err)
	}
	if _, err := rpc.Call[string](testCtx(t), cl, "Test/Big", nil); apiCode(err) != rpc.CodeTooLarge {
		t.Fatalf("Test/Big: %v", err)
	}
	hidden := rec.Find(slog.LevelWarn, msgHidden)
	if len(hidden) != 1 {
		t.Fatalf("%d hidden-error lines", len(hidden))
	}
	checkCallAttrs(t, hidden[0], "Test/Hidden", "srmp")
	if hidden[0].Attrs[logattr.Code].Int64() != rpc.CodeInternal || !strings.Contains(hidden[0].Attrs[logattr.Err].String(), "10.0.0.7") {
		t.Errorf("hidden-error line %+v: want code 500 and the error's text", hidden[0].Attrs)
	}
	big := rec.Find(slog.LevelWarn, msgTooLarge)
	if len(big) != 1 {
		t.Fatalf("%d reply-too-large lines", len(big))
	}
	checkCallAttrs(t, big[0], "Test/Big", "srmp")

	web := dialClient(t, "http://"+addr, rpc.ClientConfig{Log: quietLog()})
	if _, err := rpc.Call[int](testCtx(t), web, "Test/Hidden", nil); apiCode(err) != rpc.CodeInternal {
		t.Fatalf("Test/Hidden over HTTP: %v", err)
	}
	if hidden = rec.Find(slog.LevelWarn, msgHidden); len(hidden) != 2 {
		t.Fatalf("%d hidden-error lines after the HTTP call, want 2", len(hidden))
	}
	checkCallAttrs(t, hidden[1], "Test/Hidden", "http")
}

// A dropped request's Debug line has the peer's address as a string.
func TestDroppedLine(t *testing.T) {
	rec, log := logtest.New(slog.LevelDebug)
	_, addr := startServer(t, rpc.Config{Log: log}, nil)
	rc := dialRaw(t, addr)
	rc.write(srmp(b0Request, 1, []byte{0})) // an empty action: NewLife drops it unanswered
	waitFor(t, "the dropped line", func() bool { return len(rec.Find(slog.LevelDebug, msgDropped)) == 1 })
	checkCallAttrs(t, rec.Find(slog.LevelDebug, msgDropped)[0], "", "srmp")
}
