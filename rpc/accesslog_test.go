package rpc_test

import (
	"context"
	"encoding/binary"
	"iter"
	"log/slog"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/internal/logattr/logtest"
	"github.com/lifenet/lifenet/rpc"
)

const (
	msgServed = "rpc: call served"
	msgCalled = "rpc: call made"
	msgPushed = "rpc: push received"
)

// echoArgs is Test/Echo's argument: an object, which HTTP calls need.
type echoArgs struct{ S string }

// accessActions registers Test/Echo (S back), Test/Deny (a 403),
// Test/Count (a stream of 1, 22, 333) and Test/Push (pushes its argument
// back to the caller, then answers).
func accessActions(t *testing.T) func(*rpc.Server) {
	return func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Test/Echo", func(_ context.Context, a echoArgs) (string, error) { return a.S, nil }))
		must(t, rpc.Handle(s, "Test/Deny", func(context.Context, struct{}) (int, error) {
			return 0, rpc.NewError(rpc.CodeForbidden, "not you")
		}))
		must(t, rpc.HandleStream(s, "Test/Count", func(context.Context, struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				for _, v := range []int{1, 22, 333} {
					if !yield(v, nil) {
						return
					}
				}
			}
		}))
		must(t, rpc.Handle(s, "Test/Push", func(ctx context.Context, v string) (int, error) {
			return 0, rpc.SessionFrom(ctx).Push("Note/Back", v)
		}))
	}
}

// one returns the only record of rec at Info with message msg whose
// action is action.
func one(t *testing.T, rec *logtest.Recorder, msg, action string) logtest.Record {
	t.Helper()
	var got []logtest.Record
	for _, r := range rec.Find(slog.LevelInfo, msg) {
		if r.Attrs[logattr.Action].String() == action {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d %q lines of %s, want 1; have %+v", len(got), msg, action, rec.Records())
	}
	return got[0]
}

// checkAccess fails t unless r has code, bytes_in and bytes_out as given,
// a duration, and err exactly when code is not 0.
func checkAccess(t *testing.T, r logtest.Record, code, in, out int) {
	t.Helper()
	a := r.Attrs
	if got := a[logattr.Code].Int64(); got != int64(code) {
		t.Errorf("%s %s: code %d, want %d", r.Message, a[logattr.Action], got, code)
	}
	if got := a[logattr.BytesIn].Int64(); got != int64(in) {
		t.Errorf("%s %s: bytes_in %d, want %d", r.Message, a[logattr.Action], got, in)
	}
	if got := a[logattr.BytesOut].Int64(); got != int64(out) {
		t.Errorf("%s %s: bytes_out %d, want %d", r.Message, a[logattr.Action], got, out)
	}
	if d, ok := a[logattr.Duration]; !ok || d.Kind() != slog.KindDuration || d.Duration() <= 0 {
		t.Errorf("%s %s: duration %v", r.Message, a[logattr.Action], d)
	}
	if r.Has(logattr.Err) != (code != 0) {
		t.Errorf("%s %s: err %v with code %d", r.Message, a[logattr.Action], a[logattr.Err], code)
	}
}

// A server's and a client's access lines over each protocol: the call's
// action, code, sizes, duration and peer, the error of a failed one, a
// stream's item bytes, a push.
func TestAccessLog(t *testing.T) {
	for _, tc := range []struct{ scheme, protocol string }{
		{"tcp", "srmp"}, {"ws", "websocket"}, {"http", "http"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			srvRec, srvLog := logtest.New(slog.LevelInfo)
			_, addr := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{rpc.AccessLog(srvLog, slog.LevelInfo)}}, accessActions(t))
			clRec, clLog := logtest.New(slog.LevelInfo)
			pushed := make(chan string, 1)
			cl := dialClient(t, tc.scheme+"://"+addr, rpc.ClientConfig{
				Log:          quietLog(),
				Interceptors: []rpc.Interceptor{rpc.AccessLog(clLog, slog.LevelInfo)},
				OnPush:       func(_ string, data []byte) { pushed <- string(data) },
			})
			ctx := testCtx(t)
			if got, err := rpc.Call[string](ctx, cl, "Test/Echo", echoArgs{"hello"}); err != nil || got != "hello" {
				t.Fatalf("Test/Echo: %q, %v", got, err)
			}
			if _, err := rpc.Call[int](ctx, cl, "Test/Deny", nil); apiCode(err) != rpc.CodeForbidden {
				t.Fatalf("Test/Deny: %v", err)
			}

			// The arguments' data is {"S":"hello"}; the result "hello" is
			// raw text, but over HTTP the client gets it as JSON.
			args, result := len(`{"S":"hello"}`), len("hello")
			s := one(t, srvRec, msgServed, "Test/Echo")
			checkAccess(t, s, 0, args, result)
			checkCallAttrs(t, s, "Test/Echo", tc.protocol)
			checkAccess(t, one(t, srvRec, msgServed, "Test/Deny"), rpc.CodeForbidden, 0, 0)

			c := one(t, clRec, msgCalled, "Test/Echo")
			if tc.protocol == "http" {
				result = len(`"hello"`)
			}
			checkAccess(t, c, 0, result, args)
			if got := c.Attrs[logattr.Remote].String(); got != addr {
				t.Errorf("client line: remote %q, want the server's %q", got, addr)
			}
			if got := c.Attrs[logattr.Protocol].String(); got != tc.protocol {
				t.Errorf("client line: protocol %q, want %q", got, tc.protocol)
			}
			if c.Has(logattr.Session) == (tc.protocol == "http") {
				t.Errorf("client line: session %v (an HTTP client has no connection of its own)", c.Attrs[logattr.Session])
			}
			checkAccess(t, one(t, clRec, msgCalled, "Test/Deny"), rpc.CodeForbidden, 0, 0)
			if tc.protocol == "http" {
				return // no streams, no pushes
			}

			n := 0
			for _, err := range rpc.Stream[int](ctx, cl, "Test/Count", nil) {
				must(t, err)
				n++
			}
			if n != 3 {
				t.Fatalf("%d items", n)
			}
			checkAccess(t, one(t, srvRec, msgServed, "Test/Count"), 0, 0, len("1")+len("22")+len("333"))
			checkAccess(t, one(t, clRec, msgCalled, "Test/Count"), 0, len("1")+len("22")+len("333"), 0)

			if _, err := rpc.Call[int](ctx, cl, "Test/Push", "hi!"); err != nil {
				t.Fatal(err)
			}
			if got := recv(t, pushed, "the push"); got != "hi!" {
				t.Fatalf("push %q", got)
			}
			p := one(t, clRec, msgPushed, "Note/Back")
			checkAccess(t, p, 0, 3, 0)
			if p.Attrs[logattr.Remote].String() != addr {
				t.Errorf("push line: remote %v, want %q", p.Attrs[logattr.Remote], addr)
			}
		})
	}
}

// An unknown action's line has its 404, and a name past what a reply
// repeats is cut.
func TestAccessLogUnknownAction(t *testing.T) {
	rec, log := logtest.New(slog.LevelInfo)
	srv, _ := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{rpc.AccessLog(log, slog.LevelInfo)}}, nil)
	long := "Test/" + strings.Repeat("n", 300) // longer than a client sends (NewLife's servers take it)
	req := append(binary.AppendUvarint(nil, uint64(len(long))), long...)
	if _, isErr, ok := srv.Process(context.Background(), req, nil); !isErr || !ok {
		t.Fatalf("an unknown action: error %v, answered %v", isErr, ok)
	}
	lines := rec.Find(slog.LevelInfo, msgServed)
	if len(lines) != 1 || lines[0].Attrs[logattr.Code].Int64() != rpc.CodeNotFound {
		t.Fatalf("lines %+v, want one 404", lines)
	}
	if got := lines[0].Attrs[logattr.Action].String(); len(got) >= len(long) || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("action %q not cut", got)
	}
}

// A call whose handler panics has its line too, code 500, and the panic
// still reaches the server's recovery (counted and logged with its stack).
func TestAccessLogPanickedCall(t *testing.T) {
	rec, log := logtest.New(slog.LevelInfo)
	srv, err := rpc.NewServer(rpc.Config{Interceptors: []rpc.Interceptor{rpc.AccessLog(log, slog.LevelInfo)}, Log: log})
	must(t, err)
	defer srv.Close()
	must(t, rpc.Handle(srv, "Test/Boom", func(context.Context, struct{}) (int, error) { panic("boom") }))
	if _, isErr, ok := srv.Process(context.Background(), rawBody("Test/Boom", ""), nil); !isErr || !ok {
		t.Fatalf("a panicking call: error %v, answered %v", isErr, ok)
	}
	if r := one(t, rec, msgServed, "Test/Boom"); r.Attrs[logattr.Code].Int64() != rpc.CodeInternal || !r.Has(logattr.Err) {
		t.Errorf("line %+v, want code 500 and an err", r)
	}
	if p := srv.Stats().Panics; p != 1 {
		t.Errorf("Panics = %d, want 1", p)
	}
}

// With its level off the interceptor only calls next: no allocation, in
// itself and in a whole call through Process (which allocates its call
// context for any interceptor: the same as with a pass-through one).
func TestAccessLogOffAllocates0(t *testing.T) {
	_, log := logtest.New(slog.LevelWarn)
	ic := rpc.AccessLog(log, slog.LevelInfo)
	iv, ctx := new(rpc.Invocation), context.Background()
	ran := 0
	next := func(context.Context, *rpc.Invocation) error { ran++; return nil }
	if n := testing.AllocsPerRun(1000, func() { ic(ctx, iv, next) }); n != 0 {
		t.Errorf("AccessLog off: %v allocations per call", n)
	}
	if ran == 0 {
		t.Fatal("next never ran")
	}

	pass := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error { return next(ctx, c) }
	allocs := func(ic rpc.Interceptor) float64 {
		srv, _ := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{ic}}, func(s *rpc.Server) { stdActions(t, s) })
		req, dst := body(t, "Bench/NoArg", nil), make([]byte, 0, 64)
		return testing.AllocsPerRun(1000, func() { srv.Process(ctx, req, dst[:0]) })
	}
	if off, base := allocs(rpc.AccessLog(log, slog.LevelInfo)), allocs(pass); off != base {
		t.Errorf("Process with AccessLog off: %v allocations per call, %v with a pass-through interceptor", off, base)
	}
}

// A call that ends past the deadline its caller sent is logged with the
// timeout it got (over SRMP no reply, over HTTP a 504), not as served: its
// handler returned nil too late.
func TestAccessLogCallPastItsDeadline(t *testing.T) {
	rec, log := logtest.New(slog.LevelInfo)
	srv, err := rpc.NewServer(rpc.Config{Interceptors: []rpc.Interceptor{rpc.AccessLog(log, slog.LevelInfo)}})
	must(t, err)
	defer srv.Close()
	must(t, rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) {
		<-ctx.Done()
		return 1, nil
	}))
	if _, _, ok := srv.Process(context.Background(), rawBody("Slow/Wait", `{"Timeout-Ms":20}`), nil); ok {
		t.Fatal("a call past its deadline was answered")
	}
	if r := one(t, rec, msgServed, "Slow/Wait"); r.Attrs[logattr.Code].Int64() != rpc.CodeTimeout || !r.Has(logattr.Err) {
		t.Errorf("line %+v, want code %d and an err", r, rpc.CodeTimeout)
	}
}
