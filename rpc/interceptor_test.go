package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// trail records what interceptors saw, in order.
type trail struct {
	mu  sync.Mutex
	got []string
}

func (tr *trail) add(format string, args ...any) {
	tr.mu.Lock()
	tr.got = append(tr.got, fmt.Sprintf(format, args...))
	tr.mu.Unlock()
}

func (tr *trail) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	got := tr.got
	tr.got = nil
	return got
}

// named is an interceptor that records entering and leaving, with what it
// saw: the action, the kind, the arguments and the result or error.
func (tr *trail) named(name string) rpc.Interceptor {
	return func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		tr.add("%s> %s %s %s", name, c.Kind(), c.Action(), c.Args())
		err := next(ctx, c)
		tr.add("%s< %s %q %v", name, c.Action(), c.Result(), rpc.CodeOf(err))
		return err
	}
}

func interceptedServer(t *testing.T, cfg rpc.Config) string {
	_, addr := startServer(t, cfg, func(s *rpc.Server) {
		stdActions(t, s)
		must(t, rpc.Handle(s, "Bench/Fail", func(context.Context, struct{}) (int, error) { return 0, rpc.NewError(403, "no") }))
		must(t, rpc.HandleStream(s, "Bench/Count", func(_ context.Context, n int) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				for i := range n {
					if !yield(i+1, nil) {
						return
					}
				}
			}
		}))
	})
	return addr
}

// Interceptors run in the order installed, the first outermost, on the
// server and on the client; each sees the action, the arguments as they
// go on the wire, and the result or the error.
func TestInterceptorsChainInOrder(t *testing.T) {
	var srv, cli trail
	addr := interceptedServer(t, rpc.Config{Interceptors: []rpc.Interceptor{srv.named("s1"), srv.named("s2")}})
	cl := dialClient(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{cli.named("c1"), cli.named("c2")}})

	r, err := rpc.Call[int32](context.Background(), cl, "Bench/Add", addArgs{A: 1, B: 2})
	if err != nil || r != 3 {
		t.Fatalf("call: %d, %v", r, err)
	}
	wantSrv := []string{`s1> unary Bench/Add {"a":1,"b":2}`, `s2> unary Bench/Add {"a":1,"b":2}`, `s2< Bench/Add "3" 0`, `s1< Bench/Add "3" 0`}
	wantCli := []string{`c1> unary Bench/Add {"a":1,"b":2}`, `c2> unary Bench/Add {"a":1,"b":2}`, `c2< Bench/Add "3" 0`, `c1< Bench/Add "3" 0`}
	if got := srv.take(); !slices.Equal(got, wantSrv) {
		t.Errorf("server:\n got %q\nwant %q", got, wantSrv)
	}
	if got := cli.take(); !slices.Equal(got, wantCli) {
		t.Errorf("client:\n got %q\nwant %q", got, wantCli)
	}

	_, err = rpc.Call[int](context.Background(), cl, "Bench/Fail", nil)
	if rpc.CodeOf(err) != 403 {
		t.Fatalf("Bench/Fail: %v", err)
	}
	if got := srv.take(); len(got) != 4 || got[2] != `s2< Bench/Fail "" 403` {
		t.Errorf("server on error: %q", got)
	}
	if got := cli.take(); len(got) != 4 || got[3] != `c1< Bench/Fail "" 403` {
		t.Errorf("client on error: %q", got)
	}

	// An unknown action's 404 passes through the server's interceptors.
	_, err = rpc.Call[int](context.Background(), cl, "Bench/Nope", nil)
	if !errors.Is(err, rpc.ErrNotFound) {
		t.Fatalf("Bench/Nope: %v", err)
	}
	if got := srv.take(); len(got) != 4 || got[3] != `s1< Bench/Nope "" 404` {
		t.Errorf("server on 404: %q", got)
	}
	cli.take()
}

// An interceptor may answer without running the call (an error, or a
// result), and replace the result the call returned.
func TestInterceptorShortCircuits(t *testing.T) {
	refuse := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		switch c.Action() {
		case "Bench/NoArg":
			return rpc.NewError(rpc.CodeForbidden, "not today")
		case "Bench/EchoString":
			return c.SetResult("from the interceptor") // the handler does not run
		case "Bench/Add":
			if err := next(ctx, c); err != nil {
				return err
			}
			var sum int
			if err := c.DecodeResult(&sum); err != nil {
				return err
			}
			return c.SetResult(sum * 100)
		}
		return next(ctx, c)
	}
	addr := interceptedServer(t, rpc.Config{Interceptors: []rpc.Interceptor{refuse}})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()

	if _, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); rpc.CodeOf(err) != 403 || !strings.Contains(err.Error(), "not today") {
		t.Errorf("refused: %v", err)
	}
	if s, err := rpc.Call[string](ctx, cl, "Bench/EchoString", "hello"); err != nil || s != "from the interceptor" {
		t.Errorf("answered: %q, %v", s, err)
	}
	if n, err := rpc.Call[int](ctx, cl, "Bench/Add", addArgs{A: 1, B: 2}); err != nil || n != 300 {
		t.Errorf("replaced: %d, %v", n, err)
	}

	// On the client: a cache answers without a round trip; an error stops the call before it leaves.
	var sent trail
	cache := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		switch c.Action() {
		case "Bench/NoArg":
			return c.SetResult(7)
		case "Bench/Fail":
			return rpc.ErrForbidden
		}
		sent.add("%s", c.Action())
		return next(ctx, c)
	}
	cl2 := dialClient(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{cache}})
	if n, err := rpc.Call[int](ctx, cl2, "Bench/NoArg", nil); err != nil || n != 7 {
		t.Errorf("client short circuit: %d, %v", n, err)
	}
	if _, err := rpc.Call[int](ctx, cl2, "Bench/Fail", nil); !errors.Is(err, rpc.ErrForbidden) {
		t.Errorf("client refusal: %v", err)
	}
	if got := sent.take(); len(got) != 0 {
		t.Errorf("sent %q", got)
	}
}

// A client's SetResult after next replaces the result the reply decoded
// into the caller's value, fields and all, as the server's replaces the
// reply: nothing of the reply is left behind (a redacting interceptor
// must not leak the field it drops).
func TestClientSetResultReplacesTheDecodedResult(t *testing.T) {
	type pair struct{ A, B int }
	_, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Pair/Get", func(context.Context, struct{}) (pair, error) { return pair{A: 1, B: 2}, nil }))
		must(t, rpc.Handle(s, "Pair/None", func(context.Context, struct{}) (pair, error) { return pair{A: 1, B: 2}, nil }))
	})
	replace := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		if err := next(ctx, c); err != nil {
			return err
		}
		if c.Action() == "Pair/None" {
			return c.SetResult(nil)
		}
		return c.SetResult(map[string]int{"A": 5})
	}
	cl := dialClient(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{replace}})
	for action, want := range map[string]pair{"Pair/Get": {A: 5}, "Pair/None": {}} {
		if got, err := rpc.Call[pair](context.Background(), cl, action, nil); err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", action, got, err, want)
		}
	}
}

// A panic in a server's interceptor is a panic of the call: a 500,
// counted and logged, and the connection goes on.
func TestInterceptorPanicIsAHandlerPanic(t *testing.T) {
	boom := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		if c.Action() == "Bench/NoArg" {
			panic("interceptor bug")
		}
		return next(ctx, c)
	}
	srv, addr := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{boom}}, func(s *rpc.Server) { stdActions(t, s) })
	cl := dialClient(t, addr, rpc.ClientConfig{})
	_, err := rpc.Call[int](context.Background(), cl, "Bench/NoArg", nil)
	if rpc.CodeOf(err) != 500 || strings.Contains(err.Error(), "interceptor bug") {
		t.Errorf("panic: %v (want a 500 with the generic text)", err)
	}
	if p := srv.Stats().Panics; p != 1 {
		t.Errorf("Panics = %d", p)
	}
	if r, err := rpc.Call[int32](context.Background(), cl, "Bench/Add", addArgs{A: 2, B: 3}); err != nil || r != 5 {
		t.Errorf("after the panic: %d, %v", r, err)
	}
}

// Streams pass through the interceptors as one call each: next returns
// when the stream ends, on the server and on the client.
func TestInterceptorsWrapStreams(t *testing.T) {
	var srv, cli trail
	addr := interceptedServer(t, rpc.Config{Interceptors: []rpc.Interceptor{srv.named("s")}})
	cl := dialClient(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{cli.named("c")}})
	var items []int
	for n, err := range rpc.Stream[int](context.Background(), cl, "Bench/Count", 3) {
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, n)
		cli.add("item %d", n)
	}
	if !slices.Equal(items, []int{1, 2, 3}) {
		t.Errorf("items %v", items)
	}
	want := []string{"c> stream Bench/Count 3", "item 1", "item 2", "item 3", `c< Bench/Count "" 0`}
	if got := cli.take(); !slices.Equal(got, want) {
		t.Errorf("client:\n got %q\nwant %q", got, want)
	}
	waitFor(t, "the server's interceptor to see the stream end", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.got) == 2
	})
	if got := srv.take(); !slices.Equal(got, []string{"s> stream Bench/Count 3", `s< Bench/Count "" 0`}) {
		t.Errorf("server: %q", got)
	}

	// A consumer that stops early ends the client's stream: its interceptor sees no error.
	for range rpc.Stream[int](context.Background(), cl, "Bench/Count", 5) {
		break
	}
	if got := cli.take(); len(got) != 2 || got[1] != `c< Bench/Count "" 0` {
		t.Errorf("client, stopped early: %q", got)
	}

	// An interceptor that refuses a stream: the loop gets its error.
	refuse := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		if c.Kind() == rpc.KindStream {
			return rpc.ErrForbidden
		}
		return next(ctx, c)
	}
	cl2 := dialClient(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{refuse}})
	for _, err := range rpc.Stream[int](context.Background(), cl2, "Bench/Count", 2) {
		if !errors.Is(err, rpc.ErrForbidden) {
			t.Errorf("refused stream: %v", err)
		}
	}
}

// A client's interceptors see the server's pushes, and may drop them;
// one-way calls pass through both sides' interceptors.
func TestInterceptorsSeePushesAndOneWayCalls(t *testing.T) {
	var srv, cli trail
	oneWay := make(chan string, 1)
	s, addr := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{srv.named("s")}}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Log/Write", func(_ context.Context, line string) (struct{}, error) {
			oneWay <- line
			return struct{}{}, nil
		}))
	})
	pushed := make(chan string, 4)
	drop := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		if c.Kind() == rpc.KindPush && strings.Contains(string(c.Args()), "secret") {
			return nil // dropped: OnPush does not see it
		}
		return next(ctx, c)
	}
	cl := dialClient(t, addr, rpc.ClientConfig{
		Interceptors: []rpc.Interceptor{cli.named("c"), drop},
		OnPush:       func(action string, data []byte) { pushed <- action + " " + string(data) },
	})
	must(t, cl.InvokeOneWay(context.Background(), "Log/Write", "hello"))
	if got := recv(t, oneWay, "the one-way call"); got != "hello" {
		t.Errorf("one-way: %q", got)
	}
	waitFor(t, "the server's interceptor", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return len(srv.got) == 2 })
	if got := srv.take(); got[0] != "s> one-way Log/Write hello" {
		t.Errorf("server: %q", got)
	}
	if got := cli.take(); !slices.Equal(got, []string{"c> one-way Log/Write hello", `c< Log/Write "" 0`}) {
		t.Errorf("client: %q", got)
	}

	waitFor(t, "the push to reach the session", func() bool {
		n, _ := s.PushAll("Notify", "secret plan")
		return n == 1
	})
	if n, err := s.PushAll("Notify", "public news"); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	if got := recv(t, pushed, "the push"); got != "Notify public news" {
		t.Errorf("OnPush got %q", got)
	}
	waitFor(t, "the client's interceptor to see both pushes", func() bool { cli.mu.Lock(); defer cli.mu.Unlock(); return len(cli.got) >= 4 })
	if got := cli.take(); got[0] != "c> push Notify secret plan" || got[2] != "c> push Notify public news" {
		t.Errorf("client pushes: %q", got)
	}
}

// Config.Authorize is an interceptor, the innermost: the others see the
// calls it refuses; HTTP calls and Process pass through the same chain.
func TestAuthorizeIsTheInnermostInterceptor(t *testing.T) {
	var srv trail
	srvv, addr := startServer(t, rpc.Config{
		Interceptors: []rpc.Interceptor{srv.named("log")},
		Authorize: func(_ context.Context, s *rpc.Session, action string) error {
			srv.add("authorize %s", action)
			if s == nil || s.Token() != "good" {
				return rpc.ErrUnauthorized
			}
			return nil
		},
	}, func(s *rpc.Server) { stdActions(t, s) })
	cl := dialClient(t, addr, rpc.ClientConfig{Token: "bad"})
	if _, err := rpc.Call[int](context.Background(), cl, "Bench/NoArg", nil); !errors.Is(err, rpc.ErrUnauthorized) {
		t.Fatalf("bad token: %v", err)
	}
	got := srv.take()
	if len(got) != 3 || got[1] != "authorize Bench/NoArg" || got[2] != `log< Bench/NoArg "" 401` {
		t.Errorf("refusal: %q", got)
	}

	web := dialClient(t, "http://"+addr, rpc.ClientConfig{Token: "good"})
	if n, err := rpc.Call[int](context.Background(), web, "Bench/NoArg", nil); err != nil || n != 42 {
		t.Fatalf("HTTP: %d, %v", n, err)
	}
	if got := srv.take(); len(got) != 3 || got[0] != "log> unary Bench/NoArg " {
		t.Errorf("HTTP: %q", got)
	}

	reply, isErr, ok := srvv.Process(context.Background(), body(t, "Bench/NoArg", nil), nil)
	if !ok || !isErr || !strings.Contains(string(reply), "nauthorized") {
		t.Errorf("Process: %q %v %v", reply, isErr, ok)
	}
	if got := srv.take(); len(got) != 3 {
		t.Errorf("Process: %q", got)
	}
}

// A server interceptor finds the call in its context, as the handler does.
func TestInterceptorSeesTheCallInfo(t *testing.T) {
	type seen struct {
		action, token, remote string
		proto                 rpc.Protocol
		sameAsInfo            bool
	}
	got := make(chan seen, 2)
	look := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		info := rpc.CallInfoFrom(ctx)
		got <- seen{c.Action(), c.Info().Token(), c.Info().Session().RemoteAddr().String(), c.Info().Protocol(), info == c.Info()}
		return next(ctx, c)
	}
	addr := interceptedServer(t, rpc.Config{Interceptors: []rpc.Interceptor{look}})
	cl := dialClient(t, addr, rpc.ClientConfig{Token: "t1"})
	if _, err := rpc.Call[int](context.Background(), cl, "bench/noarg", nil); err != nil {
		t.Fatal(err)
	}
	s := recv(t, got, "the interceptor")
	if s.action != "bench/noarg" || s.token != "t1" || s.remote == "" || s.proto != rpc.ProtoSRMP || !s.sameAsInfo {
		t.Errorf("interceptor saw %+v", s)
	}
}

// Registered names the action a server's call runs, whatever the caller
// spelled: the registered name, the pattern that matched, "" for none; a
// client's is the action called.
func TestInvocationRegisteredIsTheServersName(t *testing.T) {
	var srv, cli trail
	note := func(tr *trail) rpc.Interceptor {
		return func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
			tr.add("%s=%q", c.Action(), c.Registered())
			return next(ctx, c)
		}
	}
	_, addr := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{note(&srv)}}, func(s *rpc.Server) {
		stdActions(t, s)
		must(t, rpc.Handle(s, "Dev/*", func(context.Context, struct{}) (int, error) { return 1, nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{note(&cli)}})
	ctx := context.Background()
	for _, name := range []string{"bench/noarg", "Dev/Made0", "Made/Up"} {
		_, _ = rpc.Call[int](ctx, cl, name, nil)
	}
	want := []string{`bench/noarg="Bench/NoArg"`, `Dev/Made0="Dev/*"`, `Made/Up=""`}
	if got := srv.take(); !slices.Equal(got, want) {
		t.Errorf("server saw %q, want %q", got, want)
	}
	if got := cli.take(); !slices.Equal(got, []string{`bench/noarg="bench/noarg"`, `Dev/Made0="Dev/Made0"`, `Made/Up="Made/Up"`}) {
		t.Errorf("client saw %q", got)
	}
}

// hooks is an interceptor registering two OnItem hooks that record, in
// tr, the items of the calls it wraps, and the kind of each call.
func (tr *trail) hooks(name string) rpc.Interceptor {
	return func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		tr.add("%s> %s", name, c.Kind())
		c.OnItem(func(sent bool, size int) { tr.add("%s item sent=%v size=%d", name, sent, size) })
		c.OnItem(func(bool, int) { tr.add("%s second hook", name) })
		return next(ctx, c)
	}
}

// OnItem's hooks see each item of a stream, in order, within next: the
// server's sent, the client's received before the loop gets them, with
// their data's size; a unary call has none.
func TestOnItemSeesStreamItems(t *testing.T) {
	var srv, cli trail
	addr := interceptedServer(t, rpc.Config{Interceptors: []rpc.Interceptor{srv.hooks("s")}})
	cl := dialClient(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{cli.hooks("c")}})
	for n, err := range rpc.Stream[int](context.Background(), cl, "Bench/Count", 10) {
		must(t, err)
		if n == 1 || n == 10 {
			cli.add("loop %d", n)
		}
	}
	got := cli.take()
	want := []string{"c> stream", "c item sent=false size=1", "c second hook", "loop 1"}
	if len(got) != 1+2*10+2 || !slices.Equal(got[:4], want) || got[len(got)-3] != "c item sent=false size=2" || got[len(got)-1] != "loop 10" {
		t.Errorf("client: %q", got)
	}
	waitFor(t, "the server's stream to end", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.got) == 1+2*10
	})
	got = srv.take()
	if got[0] != "s> stream" || got[1] != "s item sent=true size=1" || got[2] != "s second hook" || got[19] != "s item sent=true size=2" {
		t.Errorf("server: %q", got)
	}

	if _, err := rpc.Call[int32](context.Background(), cl, "Bench/NoArg", nil); err != nil {
		t.Fatal(err)
	}
	if got := cli.take(); !slices.Equal(got, []string{"c> unary"}) {
		t.Errorf("a unary call's hooks ran: %q", got)
	}
	waitFor(t, "the server's call", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return len(srv.got) == 1 })
	if got := srv.take(); !slices.Equal(got, []string{"s> unary"}) {
		t.Errorf("a unary call's hooks ran on the server: %q", got)
	}
}
