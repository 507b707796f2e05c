package rpc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/rpc"
)

// eventLog collects a server's CallEvents.
type eventLog struct {
	mu  sync.Mutex
	evs []rpc.CallEvent
}

func (l *eventLog) add(ev rpc.CallEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev.Session = nil // not kept past the callback (the event's rules)
	l.evs = append(l.evs, ev)
}

func (l *eventLog) all() []rpc.CallEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]rpc.CallEvent(nil), l.evs...)
}

// Config.OnCallDone sees every kind of call, over SRMP, HTTP and the
// direct path, with its action, code, error and sizes.
func TestOnCallDone(t *testing.T) {
	var log eventLog
	sessions := make(chan bool, 16)
	srv, addr := startServer(t, rpc.Config{OnCallDone: func(ev rpc.CallEvent) {
		sessions <- ev.Session != nil
		log.add(ev)
	}}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "T/Answer", func(context.Context, struct{}) (int32, error) { return 42, nil }, rpc.WithInline()))
		must(t, rpc.Handle(s, "T/Fail", func(context.Context, struct{}) (int, error) { return 0, errors.New("boom") }))
		must(t, rpc.Handle(s, "T/Slow", func(context.Context, struct{}) (int, error) { time.Sleep(20 * time.Millisecond); return 1, nil }))
		must(t, rpc.Handle(s, "T/Note", func(context.Context, string) (struct{}, error) { return struct{}{}, nil }))
		must(t, rpc.HandleStream(s, "T/Count", countTo))
	})
	ctx := testCtx(t)
	cl := dialClient(t, addr, rpc.ClientConfig{Log: quietLog()})
	var r int32
	must(t, cl.Invoke(ctx, "T/Answer", nil, &r))
	cl.Invoke(ctx, "T/Fail", nil, nil)
	cl.Invoke(ctx, "No/Such", nil, nil)
	must(t, cl.Invoke(ctx, "T/Slow", nil, nil))
	must(t, cl.InvokeOneWay(ctx, "T/Note", "hello"))
	for _, err := range rpc.Stream[int](ctx, cl, "T/Count", 3) {
		must(t, err)
	}
	resp, err := http.Get("http://" + addr + "/T/Answer")
	must(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	body, err := rpc.AppendRequest(nil, "T/Answer", nil)
	must(t, err)
	if _, _, ok := srv.Process(ctx, body, nil); !ok {
		t.Fatal("Process: no reply")
	}
	testwait.For(t, 5*time.Second, "eight events", func() bool { return len(log.all()) == 8 })

	type want struct {
		action string
		kind   rpc.CallKind
		code   int
		resp   int
	}
	got := map[want]int{}
	written := 0
	for _, ev := range log.all() {
		got[want{ev.Action, ev.Kind, ev.Code, ev.Response}]++
		if ev.Written > 0 { // an answered call over SRMP or HTTP: the hook ran once its reply was out
			written++
			if ev.Kind != rpc.KindUnary || ev.Written < ev.Wait+ev.Duration {
				t.Errorf("%s (%v): written %v, before the wait %v and the call %v ended", ev.Action, ev.Kind, ev.Written, ev.Wait, ev.Duration)
			}
		}
		if (ev.Code == rpc.CodeOK) != (ev.Err == nil) {
			t.Errorf("%s: code %d with error %v", ev.Action, ev.Code, ev.Err)
		}
		if ev.Action == "T/Slow" && ev.Duration < 20*time.Millisecond {
			t.Errorf("T/Slow took %v", ev.Duration)
		}
		if ev.Action == "T/Note" && ev.Request != len(`"hello"`) && ev.Request != len("hello") {
			t.Errorf("T/Note's request %d bytes", ev.Request)
		}
	}
	for w, n := range map[want]int{
		{"T/Answer", rpc.KindUnary, rpc.CodeOK, 2}:  3, // SRMP, HTTP, Process: the result "42"
		{"T/Fail", rpc.KindUnary, 500, 0}:           1,
		{"", rpc.KindUnary, 404, 0}:                 1,
		{"T/Slow", rpc.KindUnary, rpc.CodeOK, 1}:    1,
		{"T/Note", rpc.KindOneWay, rpc.CodeOK, -1}:  1,
		{"T/Count", rpc.KindStream, rpc.CodeOK, -1}: 1,
	} {
		if got[w] != n {
			t.Errorf("%+v: %d events, want %d (all: %+v)", w, got[w], n, log.all())
		}
	}
	if written != 5 { // SRMP's four calls and HTTP's; not the one-way call, the stream or Process
		t.Errorf("%d events with Written, want 5 (all: %+v)", written, log.all())
	}
	withSession := 0
	for range 8 {
		if <-sessions {
			withSession++
		}
	}
	if withSession != 7 {
		t.Errorf("%d events with a session, want 7 (all but Process's)", withSession)
	}
}

// A panic of OnCallDone is counted as a handler's and the call is still
// answered.
func TestOnCallDonePanics(t *testing.T) {
	srv, addr := startServer(t, rpc.Config{Log: quietLog(), OnCallDone: func(rpc.CallEvent) { panic("hook") }}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "T/One", func(context.Context, struct{}) (int, error) { return 1, nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{Log: quietLog()})
	var r int
	must(t, cl.Invoke(testCtx(t), "T/One", nil, &r))
	if r != 1 {
		t.Errorf("result %d, want 1", r)
	}
	// The hook runs once the reply has gone out: the panic is counted
	// just after the client has its reply.
	for deadline := time.Now().Add(10 * time.Second); srv.Stats().Panics != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("panics %d, want 1", srv.Stats().Panics)
		}
	}
}

// A stream refused while the server shuts down is an event too, as a
// refused call is (SRMP; over HTTP it was already).
func TestOnCallDoneSeesAStreamRefusedAtShutdown(t *testing.T) {
	var log eventLog
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	srv, addr := startServer(t, rpc.Config{OnCallDone: log.add}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "T/Hold", func(context.Context, struct{}) (int, error) {
			entered <- struct{}{}
			<-release
			return 1, nil
		}))
		must(t, rpc.HandleStream(s, "T/Count", countTo))
	})
	ctx := testCtx(t)
	cl := dialClient(t, addr, rpc.ClientConfig{Log: quietLog()})
	held := make(chan error, 1)
	go func() { held <- cl.Invoke(ctx, "T/Hold", nil, nil) }()
	recv(t, entered, "the held call")
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	testwait.For(t, 5*time.Second, "shutting down", func() bool { return !srv.Serving() })
	for _, err := range rpc.Stream[int](ctx, cl, "T/Count", 3) {
		if !errors.Is(err, rpc.ErrShutdown) {
			t.Errorf("stream during shutdown: %v, want ErrShutdown", err)
		}
		break
	}
	close(release)
	must(t, recv(t, held, "the held call's end"))
	must(t, recv(t, shut, "Shutdown"))
	var refused int
	for _, ev := range log.all() {
		if ev.Action == "T/Count" && ev.Kind == rpc.KindStream && errors.Is(ev.Err, rpc.ErrShutdown) {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d events of the refused stream, want 1: %+v", refused, log.all())
	}
}
