package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

func TestBatteryHandleRegistry(t *testing.T) {
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Bench/Add", func(context.Context, struct{}) (string, error) { return "exact", nil }))
		must(t, rpc.Handle(srv, "Bench/*", func(context.Context, struct{}) (string, error) { return "bench-star", nil }))
		must(t, rpc.Handle(srv, "*", func(context.Context, struct{}) (string, error) { return "star", nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	for action, want := range map[string]string{
		"Bench/Add": "exact", "bench/ADD": "exact", "Bench/Zzz": "bench-star", "BENCH/zzz": "bench-star",
		"Other/Q": "star", "Nothing": "star",
	} {
		if got, err := rpc.Call[string](context.Background(), cl, action, nil); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", action, got, err, want)
		}
	}
	noop := func(context.Context, struct{}) (int, error) { return 0, nil }
	for _, dup := range []string{"Bench/Add", "bench/add", "BENCH/*", "*"} { // a built-in's name replaces it (builtin_test.go)
		if err := rpc.Handle(srv, dup, noop); !errors.Is(err, rpc.ErrDuplicate) {
			t.Errorf("Handle %q again: %v, want ErrDuplicate", dup, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("n", 128), "Bench/Añadir", "Tab\x7f"} {
		if err := rpc.Handle(srv, bad, noop); !errors.Is(err, rpc.ErrSignature) {
			t.Errorf("Handle %.20q: %v, want ErrSignature", bad, err)
		}
	}
	long := strings.Repeat("n", rpc.MaxActionLen)
	must(t, rpc.Handle(srv, long, func(context.Context, struct{}) (string, error) { return "long", nil }))
	if got, err := rpc.Call[string](context.Background(), cl, long, nil); err != nil || got != "long" {
		t.Errorf("a %d-byte action: %q, %v", rpc.MaxActionLen, got, err)
	}
	if _, err := rpc.Call[string](context.Background(), cl, long+"n", nil); !errors.Is(err, rpc.ErrSignature) {
		t.Errorf("calling a 128-byte action: %v, want ErrSignature before anything is sent", err)
	}
}

// Controllers for Register.

type BenchController struct {
	nothing atomic.Int32
}

func (b *BenchController) Add(a addArgs) int32 { return a.A + a.B }

func (b *BenchController) Session(ctx context.Context) (bool, error) {
	return rpc.SessionFrom(ctx) != nil, nil
}

func (b *BenchController) Fail() error { return rpc.NewError(418, "teapot") }

func (b *BenchController) Boom(ctx context.Context) error { return errors.New("plain error") }

func (b *BenchController) Nothing() { b.nothing.Add(1) }

func (b *BenchController) Raw(p []byte) int { return len(p) }

func (b *BenchController) Echo(ctx context.Context, s string) (string, error) { return s, nil }

type FooService struct{}

func (FooService) Hello(name string) string { return "hello " + name }

func (FooService) Bye() string { return "bye" }

type TwoArgsController struct{}

func (TwoArgsController) A() {}

func (TwoArgsController) Z(a, b int) {}

type ThreeResultsController struct{}

func (ThreeResultsController) A() {}

func (ThreeResultsController) R() (int, int, error) { return 0, 0, nil }

type TwoValuesController struct{}

func (TwoValuesController) A() {}

func (TwoValuesController) R() (int, string) { return 0, "" }

type NoMethods struct{}

type ClashController struct{}

func (ClashController) A() string { return "a" }

func (ClashController) B() string { return "b" }

func TestBatteryRegister(t *testing.T) {
	bench := &BenchController{}
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, srv.Register(bench))
		must(t, srv.Register(FooService{}))
		must(t, srv.Register(FooService{}, rpc.WithPrefix("Bar")))
		must(t, srv.Register(FooService{}, rpc.WithPrefix("Baz"), rpc.WithName("Hello", "Hi"), rpc.WithName("Bye", "Top/Level")))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	if n, err := rpc.Call[int32](ctx, cl, "Bench/Add", addArgs{2, 3}); err != nil || n != 5 {
		t.Errorf("Bench/Add: %d, %v", n, err)
	}
	if ok, err := rpc.Call[bool](ctx, cl, "Bench/Session", nil); err != nil || !ok {
		t.Errorf("Bench/Session: SessionFrom non-nil = %v, %v; want true in a socket call", ok, err)
	}
	if _, err := rpc.Call[string](ctx, cl, "Bench/Fail", nil); apiCode(err) != 418 {
		t.Errorf("Bench/Fail: %v, want APIError 418", err)
	}
	var ae *rpc.APIError
	if _, err := rpc.Call[string](ctx, cl, "Bench/Boom", nil); !errors.As(err, &ae) || ae.Code != 500 || ae.Message != "Internal Server Error" {
		t.Errorf("Bench/Boom: %v, want APIError 500 \"Internal Server Error\" (the error's text stays on the server)", err)
	}
	var out json.RawMessage
	if err := cl.Invoke(ctx, "Bench/Nothing", nil, &out); err != nil || out != nil || bench.nothing.Load() != 1 {
		t.Errorf("Bench/Nothing: data %q, %v, calls %d", out, err, bench.nothing.Load())
	}
	if n, err := rpc.Call[int](ctx, cl, "Bench/Raw", []byte{9, 8, 7}); err != nil || n != 3 {
		t.Errorf("Bench/Raw: %d, %v", n, err)
	}
	if s, err := rpc.Call[string](ctx, cl, "bench/echo", map[string]string{"s": "x"}); err != nil || s != "x" {
		t.Errorf("bench/echo: %q, %v", s, err)
	}
	for action, want := range map[string]string{
		"Foo/Hello": "hello you", "Bar/Hello": "hello you", "Baz/Hi": "hello you", "Top/Level": "bye", "Foo/Bye": "bye",
	} {
		arg := any(nil)
		if strings.Contains(want, "hello") {
			arg = "you"
		}
		if got, err := rpc.Call[string](ctx, cl, action, arg); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", action, got, err, want)
		}
	}
	for _, gone := range []string{"Baz/Hello", "Baz/Bye", "FooService/Hello", "Bench/nothing2"} {
		if _, err := rpc.Call[string](ctx, cl, gone, nil); apiCode(err) != 404 {
			t.Errorf("%s: %v, want 404", gone, err)
		}
	}
	for _, bad := range []any{TwoArgsController{}, ThreeResultsController{}, TwoValuesController{}, NoMethods{}} {
		if err := srv.Register(bad); !errors.Is(err, rpc.ErrSignature) {
			t.Errorf("Register %T: %v, want ErrSignature", bad, err)
		}
	}
	for _, gone := range []string{"TwoArgs/A", "ThreeResults/A", "TwoValues/A"} {
		if _, err := rpc.Call[string](ctx, cl, gone, nil); apiCode(err) != 404 {
			t.Errorf("%s after a failed Register: %v, want 404 (nothing registered)", gone, err)
		}
	}
	if err := srv.Register(FooService{}); !errors.Is(err, rpc.ErrDuplicate) {
		t.Errorf("Register FooService twice: %v, want ErrDuplicate", err)
	}
	all, err := rpc.Call[[]string](ctx, cl, "Api/All", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Api/All", "Api/Info", "Bench/Add", "Bench/Nothing", "Foo/Hello", "Bar/Bye", "Baz/Hi", "Top/Level"} {
		n := 0
		for _, sig := range all {
			if strings.Contains(sig, " "+name+"(") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("Api/All lists %s %d times: %q", name, n, all)
		}
	}
	if !contains(all, "Void Bench/Nothing()") || !contains(all, "Int32 Bench/Add(Int32 a, Int32 b)") {
		t.Errorf("Api/All signatures: %q", all)
	}
}

// nameOnly is a body of just an action name (any bytes), with a one-byte
// length.
func nameOnly(name string) []byte { return append([]byte{byte(len(name))}, name...) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Register stops at a duplicate name; the actions it registered before are
// left behind, so a corrected retry fails on them.
func TestBatteryRegisterDuplicateIsAtomic(t *testing.T) {
	srv, err := rpc.NewServer(rpc.Config{Log: quietLog()})
	must(t, err)
	defer srv.Close()
	must(t, rpc.Handle(srv, "Clash/B", func(context.Context, struct{}) (int, error) { return 0, nil }))
	if err := srv.Register(ClashController{}); !errors.Is(err, rpc.ErrDuplicate) {
		t.Fatalf("Register over Clash/B: %v, want ErrDuplicate", err)
	}

	reply, isErr, _ := srv.Process(context.Background(), body(t, "Clash/A", nil), nil)
	if !isErr {
		t.Errorf("Clash/A answered %q after the failed Register; want 404 (nothing registered)", reply)
	}
}

func TestBatteryApiInfo(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, nil)
	cl := dialClient(t, addr, rpc.ClientConfig{})
	info, err := rpc.Call[map[string]any](context.Background(), cl, "Api/Info", nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := info["Id"].(float64); !ok || int(id) != os.Getpid() {
		t.Errorf("Id %v, want the pid %d", info["Id"], os.Getpid())
	}
	ts, _ := info["Time"].(string)
	tm, err := time.ParseInLocation("2006-01-02 15:04:05", ts, time.Local)
	if err != nil || time.Since(tm).Abs() > time.Minute {
		t.Errorf("Time %q: %v", ts, err)
	}
	if r, _ := info["Remote"].(string); !strings.HasPrefix(r, "127.0.0.1:") {
		t.Errorf("Remote %v", info["Remote"])
	}
	withState, err := rpc.Call[map[string]any](context.Background(), cl, "Api/Info", map[string]string{"state": "abc"})
	if err != nil || withState["State"] != "abc" {
		t.Errorf("Api/Info state: %v, %v", withState["State"], err)
	}
}

func TestBatteryHandlerPanic(t *testing.T) {
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Bad/Panic", func(context.Context, struct{}) (int, error) { panic("kaboom") }))
		must(t, rpc.Handle(srv, "Bad/PanicInline", func(context.Context, struct{}) (int, error) { panic("inline kaboom") }, rpc.WithInline()))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	var ae *rpc.APIError
	if _, err := rpc.Call[int](ctx, cl, "Bad/Panic", nil); !errors.As(err, &ae) || ae.Code != 500 || strings.Contains(ae.Message, "kaboom") {
		t.Fatalf("Bad/Panic: %v, want APIError 500 without the panic's value", err)
	}
	if got := srv.Stats().Panics; got != 1 {
		t.Errorf("Panics %d, want 1", got)
	}
	if n, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil || n != 42 {
		t.Fatalf("the call after the panic: %d, %v", n, err)
	}
	if _, err := rpc.Call[int](ctx, cl, "Bad/PanicInline", nil); apiCode(err) != 500 {
		t.Fatalf("Bad/PanicInline: %v, want APIError 500", err)
	}
	if n, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil || n != 42 || srv.Stats().Panics != 2 {
		t.Fatalf("after the inline panic: %d, %v, panics %d", n, err, srv.Stats().Panics)
	}
}

func TestBatteryDroppedRequests(t *testing.T) {
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	rc := dialRaw(t, addr)
	var in []byte
	in = append(in, srmp(b0Request, 1, []byte{0})...)                     // empty action
	in = append(in, srmp(b0Request, 2, []byte("\x07Bench/\xc3"))...)      // non-ASCII action
	in = append(in, srmp(b0Request, 3, nameOnly("Bench/Añadir"))...)      // non-ASCII action, valid UTF-8
	in = append(in, srmp(b0Request, 4, []byte("\x20Bench/NoArg"))...)     // name longer than the body
	in = append(in, srmp(b0Request, 5, []byte("\x0bBench/NoArg\x01"))...) // a stray byte
	rc.write(in)
	rc.write(srmp(b0Request, 6, body(t, "Bench/NoArg", nil)))
	f := rc.readFrame()
	if f.b0 != b0Reply || f.seq != 6 || !bytes.Equal(f.payload, body(t, "Bench/NoArg", "42")) {
		t.Fatalf("first answer: %02X seq %d % X; want the reply to seq 6 (the others dropped)", f.b0, f.seq, f.payload)
	}
	waitFor(t, "5 dropped requests", func() bool { return srv.Stats().Dropped == 5 })
	// Still nothing more on the wire: the next answer is the next request's.
	rc.write(srmp(b0Request, 7, body(t, "Bench/NoArg", nil)))
	if f := rc.readFrame(); f.seq != 7 {
		t.Fatalf("answer to seq %d, want 7", f.seq)
	}
	if got := srv.Stats().Dropped; got != 5 {
		t.Errorf("Dropped %d, want 5", got)
	}
}

func TestBatteryOneWay(t *testing.T) {
	seen := make(chan string, 4)
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Log/Write", func(_ context.Context, s string) (string, error) {
			seen <- s
			return "reply nobody gets", nil
		}))
		must(t, rpc.Handle(srv, "Log/Fail", func(_ context.Context, s string) (int, error) {
			seen <- s
			return 0, rpc.NewError(499, "no reply either")
		}))
	})
	rc := dialRaw(t, addr)
	rc.write(srmp(b0OneWay, 1, body(t, "Log/Write", "one")))
	rc.write(srmp(b0OneWay, 2, body(t, "Log/Fail", "two")))
	rc.write(srmp(b0OneWay, 3, body(t, "Log/Missing", "three")))
	got := []string{recv(t, seen, "the one-way call"), recv(t, seen, "the failing one-way call")}
	if !(got[0] == "one" && got[1] == "two" || got[0] == "two" && got[1] == "one") {
		t.Errorf("handlers saw %q", got)
	}
	rc.write(srmp(b0Request, 4, body(t, "Bench/NoArg", nil)))
	if f := rc.readFrame(); f.b0 != b0Reply || f.seq != 4 {
		t.Fatalf("first frame after one-way calls: %02X seq %d % X; want the reply to seq 4", f.b0, f.seq, f.payload)
	}
	// The client's InvokeOneWay is the same message.
	cl := dialClient(t, addr, rpc.ClientConfig{})
	must(t, cl.InvokeOneWay(context.Background(), "Log/Write", "from client"))
	if s := recv(t, seen, "InvokeOneWay"); s != "from client" {
		t.Errorf("InvokeOneWay delivered %q", s)
	}
}

func TestBatterySlowHandlerDoesNotBlockTheConnection(t *testing.T) {
	g := newGate(t, 1)
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) { return 7, g.wait(ctx) }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	slow := make(chan error, 1)
	go func() {
		n, err := rpc.Call[int](context.Background(), cl, "Slow/Wait", nil)
		if err == nil && n != 7 {
			err = fmt.Errorf("result %d", n)
		}
		slow <- err
	}()
	recv(t, g.entered, "Slow/Wait to start")
	if n, err := rpc.Call[int](context.Background(), cl, "Bench/NoArg", nil); err != nil || n != 42 {
		t.Fatalf("a call behind a blocked one: %d, %v", n, err)
	}
	g.open()
	if err := recv(t, slow, "Slow/Wait's reply"); err != nil {
		t.Fatal(err)
	}
}

func TestBatterySerialRunsInOrder(t *testing.T) {
	g := newGate(t, 1)
	var slowDone atomic.Bool
	_, addr := startServer(t, rpc.Config{Serial: true}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) {
			err := g.wait(ctx)
			slowDone.Store(true)
			return 7, err
		}))
		must(t, rpc.Handle(srv, "Slow/After", func(context.Context, struct{}) (bool, error) { return slowDone.Load(), nil }))
	})
	rc := dialRaw(t, addr)
	rc.write(append(srmp(b0Request, 1, body(t, "Slow/Wait", nil)), srmp(b0Request, 2, body(t, "Slow/After", nil))...))
	recv(t, g.entered, "Slow/Wait to start")
	g.open()
	f1, f2 := rc.readFrame(), rc.readFrame()
	if f1.seq != 1 || f2.seq != 2 || !bytes.Equal(f2.payload, body(t, "Slow/After", "True")) {
		t.Fatalf("replies seq %d, %d (%q); want 1 then 2 with True (run after Slow/Wait)", f1.seq, f2.seq, f2.payload)
	}
}

func TestBatteryInlineActions(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Fast/Add", func(_ context.Context, a addArgs) (int32, error) { return a.A + a.B, nil }, rpc.WithInline()))
		must(t, rpc.Handle(srv, "Fast/Fail", func(context.Context, struct{}) (int, error) { return 0, rpc.NewError(409, "conflict") }, rpc.WithInline()))
	})
	rc := dialRaw(t, addr)
	var in []byte
	in = append(in, srmp(b0Request, 1, body(t, "Fast/Add", addArgs{1, 2}))...)
	in = append(in, srmp(b0Request, 2, body(t, "Bench/Add", addArgs{3, 4}))...)
	in = append(in, srmp(b0Request, 3, body(t, "Fast/Fail", nil))...)
	in = append(in, srmp(b0Request, 4, body(t, "Fast/Add", addArgs{5, 6}))...)
	rc.write(in)
	want := map[byte]frame{
		1: {b0Reply, 1, body(t, "Fast/Add", "3")},
		2: {b0Reply, 2, body(t, "Bench/Add", "7")},
		3: {b0Error, 3, errBody("Fast/Fail", 409, "conflict")},
		4: {b0Reply, 4, body(t, "Fast/Add", "11")},
	}
	for range 4 {
		f := rc.readFrame()
		w, ok := want[f.seq]
		if !ok || f.b0 != w.b0 || !bytes.Equal(f.payload, w.payload) {
			t.Fatalf("reply %02X seq %d % X; want %02X % X", f.b0, f.seq, f.payload, w.b0, w.payload)
		}
		delete(want, f.seq)
	}
}

func TestBatteryMaxInFlightOne(t *testing.T) {
	g := newGate(t, 1)
	_, addr := startServer(t, rpc.Config{MaxInFlight: 1}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) { return 7, g.wait(ctx) }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	slow := make(chan error, 1)
	go func() {
		_, err := rpc.Call[int](context.Background(), cl, "Slow/Wait", nil)
		slow <- err
	}()
	recv(t, g.entered, "Slow/Wait to start")
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := rpc.Call[int32](context.Background(), cl, "Bench/Add", addArgs{int32(i), 1})
			if err == nil && n != int32(i)+1 {
				err = fmt.Errorf("Bench/Add(%d, 1) = %d", i, n)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	g.open()
	if err := recv(t, slow, "Slow/Wait"); err != nil {
		t.Error(err)
	}
}

func TestBatteryShutdown(t *testing.T) {
	g := newGate(t, 1)
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) { return 7, g.wait(ctx) }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	type result struct {
		n   int
		err error
	}
	slow := make(chan result, 1)
	go func() {
		n, err := rpc.Call[int](ctx, cl, "Slow/Wait", nil)
		slow <- result{n, err}
	}()
	recv(t, g.entered, "Slow/Wait to start")
	done := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, testTimeout)
		defer cancel()
		done <- srv.Shutdown(sctx)
	}()
	// Calls keep being answered until Shutdown has begun; from then on they
	// get 503 while the slow call is still running.
	var err error
	waitFor(t, "a 503 after Shutdown began", func() bool {
		_, err = rpc.Call[int](ctx, cl, "Bench/NoArg", nil)
		return err != nil
	})
	var ae *rpc.APIError
	if !errors.As(err, &ae) || ae.Code != rpc.CodeUnavailable || !strings.Contains(ae.Message, rpc.ErrShutdown.Error()) {
		t.Fatalf("a call during Shutdown: %v, want APIError 503 naming ErrShutdown", err)
	}
	if _, err := rpc.Call[[]string](ctx, cl, "Api/All", nil); apiCode(err) != 503 {
		t.Errorf("Api/All during Shutdown: %v, want 503", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) while a call was running", err)
	default:
	}
	g.open()
	if r := recv(t, slow, "the slow call's reply"); r.err != nil || r.n != 7 {
		t.Fatalf("the call in progress: %d, %v; want 7", r.n, r.err)
	}
	if err := recv(t, done, "Shutdown"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err == nil {
		t.Error("a call after Shutdown succeeded")
	}
}

func TestBatteryAuthorize(t *testing.T) {
	type seen struct {
		action  string
		session bool
	}
	calls := make(chan seen, 16)
	cfg := rpc.Config{Authorize: func(ctx context.Context, s *rpc.Session, action string) error {
		calls <- seen{action, s != nil && rpc.SessionFrom(ctx) == s}
		if action == "Open/Ping" || s.Token() == "let-me-in" {
			return nil
		}
		return rpc.NewError(403, "forbidden: "+action)
	}}
	_, addr := startServer(t, cfg, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Open/Ping", func(context.Context, struct{}) (string, error) { return "pong", nil }))
		must(t, rpc.Handle(srv, "Secret/Get", func(context.Context, struct{}) (string, error) { return "secret", nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	var ae *rpc.APIError
	if _, err := rpc.Call[string](ctx, cl, "secret/get", nil); !errors.As(err, &ae) || ae.Code != 403 || ae.Message != "forbidden: Secret/Get" {
		t.Errorf("secret/get: %v, want 403 naming the registered action", err)
	}
	if s := recv(t, calls, "Authorize"); s.action != "Secret/Get" || !s.session {
		t.Errorf("Authorize saw %+v", s)
	}
	if s, err := rpc.Call[string](ctx, cl, "Open/Ping", nil); err != nil || s != "pong" {
		t.Errorf("Open/Ping: %q, %v", s, err)
	}
	recv(t, calls, "Authorize")
	for _, builtin := range []string{"Api/All", "Api/Info"} {
		if err := cl.Invoke(ctx, builtin, nil, nil); err != nil {
			t.Errorf("%s: %v; built-ins bypass Authorize", builtin, err)
		}
	}
	if _, err := rpc.Call[string](ctx, cl, "Nope/Nope", nil); apiCode(err) != 404 {
		t.Errorf("an unknown action: %v, want 404", err)
	}
	select {
	case s := <-calls:
		t.Errorf("Authorize ran for %q", s.action)
	default:
	}
	// A token in the arguments is taken before Authorize runs.
	if s, err := rpc.Call[string](ctx, cl, "Secret/Get", map[string]string{"Token": "let-me-in"}); err != nil || s != "secret" {
		t.Errorf("Secret/Get with the token: %q, %v", s, err)
	}
	if s, err := rpc.Call[string](ctx, cl, "Secret/Get", nil); err != nil || s != "secret" {
		t.Errorf("Secret/Get later on the same connection: %q, %v", s, err)
	}
}

// Errors from Authorize other than an *APIError are 500s, with the generic
// text.
func TestBatteryAuthorizePlainError(t *testing.T) {
	cfg := rpc.Config{Authorize: func(context.Context, *rpc.Session, string) error { return errors.New("db down") }}
	_, addr := startServer(t, cfg, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Plain/Deny", func(context.Context, struct{}) (string, error) { return "", nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	var ae *rpc.APIError
	if _, err := rpc.Call[string](context.Background(), cl, "Plain/Deny", nil); !errors.As(err, &ae) || ae.Code != 500 || ae.Message != "Internal Server Error" {
		t.Errorf("a plain Authorize error: %v, want 500 \"Internal Server Error\"", err)
	}
}

func TestBatterySessionToken(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Auth/Login", func(_ context.Context, a struct{ User string }) (string, error) { return a.User, nil }))
		must(t, rpc.Handle(srv, "Auth/Who", func(ctx context.Context, _ struct{}) (string, error) { return rpc.SessionFrom(ctx).Token(), nil }))
		must(t, rpc.Handle(srv, "Auth/Issue", func(ctx context.Context, _ struct{}) (string, error) {
			rpc.SessionFrom(ctx).SetToken("issued")
			return "ok", nil
		}))
	})
	ctx := context.Background()
	cl := dialClient(t, addr, rpc.ClientConfig{})
	if who, err := rpc.Call[string](ctx, cl, "Auth/Who", nil); err != nil || who != "" {
		t.Errorf("before any token: %q, %v", who, err)
	}
	if u, err := rpc.Call[string](ctx, cl, "Auth/Login", map[string]string{"User": "ann", "token": "abc"}); err != nil || u != "ann" {
		t.Errorf("Auth/Login: %q, %v", u, err)
	}
	if who, err := rpc.Call[string](ctx, cl, "Auth/Who", nil); err != nil || who != "abc" {
		t.Errorf("after a Token argument: %q, %v; want abc", who, err)
	}
	if _, err := rpc.Call[string](ctx, cl, "Auth/Issue", nil); err != nil {
		t.Fatal(err)
	}
	if who, err := rpc.Call[string](ctx, cl, "Auth/Who", nil); err != nil || who != "issued" {
		t.Errorf("after SetToken: %q, %v", who, err)
	}
	// Another connection has its own token; ClientConfig.Token goes with
	// every call, a no-arg one too.
	cl2 := dialClient(t, addr, rpc.ClientConfig{Token: "t2"})
	if who, err := rpc.Call[string](ctx, cl2, "Auth/Who", nil); err != nil || who != "t2" {
		t.Errorf("a no-arg call: %q, %v; want its token t2", who, err)
	}
	if _, err := rpc.Call[string](ctx, cl2, "Auth/Login", map[string]string{"User": "bob"}); err != nil {
		t.Fatal(err)
	}
	if who, err := rpc.Call[string](ctx, cl2, "Auth/Who", nil); err != nil || who != "t2" {
		t.Errorf("second connection: %q, %v; want t2", who, err)
	}
}

// ClientConfig.Token and Headers are merged into object arguments, in
// NewLife's order: the object's keys, Token, then the headers by name.
func TestBatteryClientMergesTokenAndHeaders(t *testing.T) {
	got := make(chan frame, 8)
	addr := fakeServer(t, func(f frame) []byte {
		got <- f
		name := f.payload[:1+int(f.payload[0])]
		return srmp(b0Reply, f.seq, name)
	})
	ctx := context.Background()
	cl := dialClient(t, addr, rpc.ClientConfig{Token: "t1"})
	must(t, cl.Invoke(ctx, "Bench/Add", addArgs{1, 2}, nil))
	f := recv(t, got, "the request")
	want := append(unhex(t, "01 01 28 00 09 42 65 6E 63 68 2F 41 64 64 1A 00 00 00"), `{"a":1,"b":2,"Token":"t1"}`...)
	if whole := srmp(f.b0, f.seq, f.payload); !bytes.Equal(whole, want) {
		t.Errorf("with Token:\n got % X\nwant % X", whole, want)
	}
	// A call without arguments carries the token alone (no headers: NewLife
	// merges those into argument objects only). The first call on a new
	// connection whose body has no room for the token (a bare value,
	// bytes, an array) is preceded by Api/Info with the token alone; the
	// server's session keeps it for the calls after.
	cases := []struct {
		args any
		data []string // the bodies' data, in order
	}{
		{nil, []string{`{"Token":"t1"}`}},
		{"text", []string{"text"}},
		{map[string]int{}, []string{`{"Token":"t1","App":"a","TraceId":"x"}`}},
		{map[string]int{"z": 1}, []string{`{"z":1,"Token":"t1","App":"a","TraceId":"x"}`}},
		{7, []string{"7"}},
		{[]byte{1, 2}, []string{"\x01\x02"}},
		{[]int{1}, []string{`[1]`}},
	}
	cl2 := dialClient(t, addr, rpc.ClientConfig{Token: "t1", Headers: map[string]string{"TraceId": "x", "App": "a"}})
	for _, c := range cases {
		must(t, cl2.Invoke(ctx, "X/Y", c.args, nil))
		for _, data := range c.data {
			f := recv(t, got, "the request")
			if want := body(t, "X/Y", data); !bytes.Equal(f.payload, want) {
				t.Errorf("args %v: body %q, want data %q", c.args, f.payload, data)
			}
		}
	}
	// A new connection (another client) whose first call has a bare value.
	cl3 := dialClient(t, addr, rpc.ClientConfig{Token: "t1"})
	must(t, cl3.Invoke(ctx, "X/Y", 7, nil))
	for _, want := range [][]byte{body(t, "Api/Info", `{"Token":"t1"}`), body(t, "X/Y", "7")} {
		if f := recv(t, got, "the request"); !bytes.Equal(f.payload, want) {
			t.Errorf("a bare value on a new connection: body %q, want %q", f.payload, want)
		}
	}
	cl3.SetToken("t2")
	must(t, cl3.Invoke(ctx, "X/Y", "s", nil))
	for _, want := range [][]byte{body(t, "Api/Info", `{"Token":"t2"}`), body(t, "X/Y", "s")} {
		if f := recv(t, got, "the request"); !bytes.Equal(f.payload, want) {
			t.Errorf("a bare value after SetToken: body %q, want %q", f.payload, want)
		}
	}
	select {
	case f := <-got:
		t.Errorf("an extra request: %q", f.payload)
	default:
	}
}

func TestBatteryPush(t *testing.T) {
	sessions := make(chan *rpc.Session, 4)
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Sub/Join", func(ctx context.Context, _ struct{}) (struct{}, error) {
			sessions <- rpc.SessionFrom(ctx)
			return struct{}{}, nil
		}))
	})
	type push struct{ action, data string }
	pushes := make(chan push, 8)
	cl := dialClient(t, addr, rpc.ClientConfig{OnPush: func(action string, data []byte) {
		pushes <- push{action, string(data)}
	}})
	ctx := context.Background()
	must(t, cl.Invoke(ctx, "Sub/Join", nil, nil))
	ss := recv(t, sessions, "the session")
	type command struct {
		Id      int
		Command string
	}
	must(t, ss.Push("Notify", command{1, "restart"}))
	if p := recv(t, pushes, "the push"); p != (push{"Notify", `{"Id":1,"Command":"restart"}`}) {
		t.Errorf("push %+v", p)
	}
	must(t, ss.Push("Ping", nil))
	if p := recv(t, pushes, "the push"); p != (push{"Ping", ""}) {
		t.Errorf("push %+v", p)
	}
	if err := ss.Push("", "x"); !errors.Is(err, rpc.ErrSignature) {
		t.Errorf("a push without an action: %v", err)
	}
	// PushAll reaches every socket session, not HTTP ones.
	cl2 := dialClient(t, addr, rpc.ClientConfig{OnPush: func(action string, data []byte) {
		pushes <- push{"2:" + action, string(data)}
	}})
	must(t, cl2.Invoke(ctx, "Bench/NoArg", nil, nil))
	hc := dialRaw(t, addr)
	hc.write([]byte("GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n\r\n"))
	if _, err := hc.r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	n, err := srv.PushAll("All", "hi")
	if err != nil || n != 2 {
		t.Errorf("PushAll: %d, %v; want 2 (the HTTP connection left out)", n, err)
	}
	got := map[push]bool{recv(t, pushes, "a broadcast"): true, recv(t, pushes, "a broadcast"): true}
	if !got[push{"All", "hi"}] || !got[push{"2:All", "hi"}] {
		t.Errorf("broadcast reached %v", got)
	}
}

// The first push of a server is R7 of docs/PROTOCOL.md §5.4, byte for byte.
func TestBatteryPushVectorR7(t *testing.T) {
	sessions := make(chan *rpc.Session, 1)
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Sub/Join", func(ctx context.Context, _ struct{}) (struct{}, error) {
			sessions <- rpc.SessionFrom(ctx)
			return struct{}{}, nil
		}))
	})
	rc := dialRaw(t, addr)
	rc.write(srmp(b0Request, 1, body(t, "Sub/Join", nil)))
	if f := rc.readFrame(); f.b0 != b0Reply || !bytes.Equal(f.payload, []byte("\x08Sub/Join")) {
		t.Fatalf("Sub/Join reply %02X % X: want a name-only reply (null result)", f.b0, f.payload)
	}
	ss := recv(t, sessions, "the session")
	must(t, ss.Push("Notify", struct {
		Id      int
		Command string
	}{1, "restart"}))
	want := unhex(t, `41 01 27 00 | 06 4E 6F 74 69 66 79 | 1C 00 00 00 |
		7B 22 49 64 22 3A 31 2C 22 43 6F 6D 6D 61 6E 64 22 3A 22 72 65 73 74 61 72 74 22 7D`)
	f := rc.readFrame()
	if got := srmp(f.b0, f.seq, f.payload); !bytes.Equal(got, want) {
		t.Errorf("push:\n got % X\nwant % X", got, want)
	}
}
