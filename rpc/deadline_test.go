package rpc_test

import (
	"bufio"
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// With SendTimeout a client sends each call's remaining time as
// Timeout-Ms: its context's deadline, else its Timeout; into an object
// made for a call without arguments; never without SendTimeout.
func TestClientSendsItsRemainingTime(t *testing.T) {
	got := make(chan string, 4)
	addr := fakeServer(t, func(f frame) []byte {
		action, data := splitBody(f.payload)
		got <- data
		return srmp(b0Reply, f.seq, body(t, action, "1"))
	})
	ms := func(data, prefix string) int {
		t.Helper()
		v, ok := strings.CutPrefix(data, prefix)
		if !ok || !strings.HasSuffix(v, "}") {
			t.Fatalf("data %s, want %s…}", data, prefix)
		}
		n, err := strconv.Atoi(strings.TrimSuffix(v, "}"))
		must(t, err)
		return n
	}
	cl := dialClient(t, addr, rpc.ClientConfig{SendTimeout: true, Timeout: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	must(t, cl.Invoke(ctx, "Bench/Add", addArgs{A: 1}, nil))
	if n := ms(recv(t, got, "a call"), `{"a":1,"b":0,"Timeout-Ms":`); n > 2000 || n < 1000 {
		t.Errorf("remaining time %d ms, want about 2000", n)
	}
	must(t, cl.Invoke(context.Background(), "Bench/Add", nil, nil))
	if n := ms(recv(t, got, "a call"), `{"Timeout-Ms":`); n != 3000 {
		t.Errorf("remaining time %d ms, want the client's Timeout, 3000", n)
	}
	must(t, cl.Invoke(ctx, "Bench/Add", "bare", nil))
	if d := recv(t, got, "a call"); d != "bare" {
		t.Errorf("a bare value carried %q", d)
	}
	off := dialClient(t, addr, rpc.ClientConfig{})
	must(t, off.Invoke(ctx, "Bench/Add", nil, nil))
	if d := recv(t, got, "a call"); d != "" {
		t.Errorf("without SendTimeout: %q", d)
	}
}

// deadlineServer serves Slow/Wait, which waits for its context's end and
// reports the deadline it had and why it ended.
type waited struct {
	deadline time.Time
	sent     bool // CallInfo.Deadline's ok
	err      error
}

func deadlineServer(t *testing.T, release <-chan struct{}) (*rpc.Server, string, <-chan waited, <-chan struct{}) {
	ended := make(chan waited, 4)
	entered := make(chan struct{}, 4)
	srv, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Slow/Wait", func(ctx context.Context, _ struct{}) (string, error) {
			dl, _ := ctx.Deadline()
			_, sent := rpc.CallInfoFrom(ctx).Deadline()
			entered <- struct{}{}
			select {
			case <-ctx.Done():
			case <-release:
			}
			ended <- waited{dl, sent, ctx.Err()}
			return "done", nil
		}))
	})
	return srv, addr, ended, entered
}

// A deadline the caller sent reaches the handler: its context ends then,
// as the caller stops waiting; SRMP has no other way to cancel a call.
func TestDeadlineReachesTheHandler(t *testing.T) {
	_, addr, ended, _ := deadlineServer(t, nil)
	cl := dialClient(t, addr, rpc.ClientConfig{SendTimeout: true})
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := rpc.Call[string](ctx, cl, "Slow/Wait", nil)
	if !errors.Is(err, rpc.ErrTimeout) {
		t.Fatalf("call: %v, want ErrTimeout", err)
	}
	w := recv(t, ended, "the handler's end")
	if !errors.Is(w.err, context.DeadlineExceeded) || !w.sent {
		t.Errorf("handler ended with %v (deadline sent: %v), want its deadline", w.err, w.sent)
	}
	if d := w.deadline.Sub(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("handler's deadline %v after the call began, want about 200ms", d)
	}
}

// A handler's context without a deadline still ends when its connection
// ends, and at Close; with a deadline too.
func TestHandlerContextEndsWithItsConnection(t *testing.T) {
	srv, addr, ended, entered := deadlineServer(t, nil)
	for _, send := range []bool{false, true} {
		cl, err := rpc.Dial(context.Background(), addr, rpc.ClientConfig{SendTimeout: send, Timeout: time.Minute})
		must(t, err)
		errc := make(chan error, 1)
		go func() { _, err := rpc.Call[string](context.Background(), cl, "Slow/Wait", nil); errc <- err }()
		recv(t, entered, "the handler")
		cl.Close()
		w := recv(t, ended, "the handler's end")
		if !errors.Is(w.err, context.Canceled) || w.sent != send || w.deadline.IsZero() == send {
			t.Errorf("SendTimeout %v: handler ended with %+v, want cancelled by the connection's end", send, w)
		}
		recv(t, errc, "the call's end")
	}
	cl := dialClient(t, addr, rpc.ClientConfig{SendTimeout: true})
	go rpc.Call[string](context.Background(), cl, "Slow/Wait", nil)
	recv(t, entered, "the handler")
	srv.Close()
	if w := recv(t, ended, "the handler's end"); !errors.Is(w.err, context.Canceled) {
		t.Errorf("at Close: %+v", w)
	}
}

// Without SendTimeout, the handler's context has no deadline.
func TestNoDeadlineByDefault(t *testing.T) {
	release := make(chan struct{})
	close(release)
	_, addr, ended, _ := deadlineServer(t, release)
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := rpc.Call[string](ctx, cl, "Slow/Wait", nil); err != nil {
		t.Fatal(err)
	}
	if w := recv(t, ended, "the handler's end"); !w.deadline.IsZero() || w.sent || w.err != nil {
		t.Errorf("handler had %+v", w)
	}
}

// Over HTTP, a client that leaves (closes its connection, or a lifenet
// http:// client whose call's context ends) cancels the handler's context:
// the call runs on its own goroutine while the connection is read.
func TestHTTPClientLeavingCancelsTheHandler(t *testing.T) {
	_, addr, ended, entered := deadlineServer(t, nil)
	conn, err := net.Dial("tcp", addr)
	must(t, err)
	_, err = conn.Write([]byte("GET /Slow/Wait HTTP/1.1\r\nHost: x\r\n\r\n"))
	must(t, err)
	recv(t, entered, "the handler")
	conn.Close()
	if w := recv(t, ended, "the handler's end"); !errors.Is(w.err, context.Canceled) {
		t.Errorf("raw client left: handler ended with %+v", w)
	}

	cl := dialClient(t, "http://"+addr, rpc.ClientConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := rpc.Call[string](ctx, cl, "Slow/Wait", nil); errc <- err }()
	recv(t, entered, "the handler")
	cancel()
	if w := recv(t, ended, "the handler's end"); !errors.Is(w.err, context.Canceled) {
		t.Errorf("http:// client gave up: handler ended with %+v", w)
	}
	if err := recv(t, errc, "the call"); !errors.Is(err, context.Canceled) {
		t.Errorf("call: %v", err)
	}
}

// Requests pipelined behind an HTTP call that runs on its own goroutine
// are answered after it, in order.
func TestHTTPPipelinedBehindASlowCall(t *testing.T) {
	release := make(chan struct{})
	_, addr, ended, entered := deadlineServer(t, release)
	conn, err := net.Dial("tcp", addr)
	must(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testTimeout))
	_, err = conn.Write([]byte("GET /Slow/Wait HTTP/1.1\r\nHost: x\r\n\r\nGET /Slow/Wait HTTP/1.1\r\nHost: x\r\n\r\n"))
	must(t, err)
	recv(t, entered, "the first call")
	close(release)
	r := bufio.NewReader(conn)
	for i := range 2 {
		resp, err := readResponse(r)
		if err != nil || resp != `{"action":"Slow/Wait","code":0,"data":"done"}` {
			t.Fatalf("answer %d: %q, %v", i, resp, err)
		}
		recv(t, ended, "a call's end")
	}
}

// Over HTTP a call that ends past the deadline its caller sent is
// answered 504 (over SRMP it gets no reply).
func TestHTTPPastTheDeadlineIs504(t *testing.T) {
	_, addr, ended, _ := deadlineServer(t, nil)
	conn, err := net.Dial("tcp", addr)
	must(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testTimeout))
	b := `{"Timeout-Ms":50}`
	_, err = conn.Write([]byte("POST /Slow/Wait HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(b)) + "\r\n\r\n" + b))
	must(t, err)
	resp, err := readResponse(bufio.NewReader(conn))
	if err != nil || resp != `{"action":"Slow/Wait","code":504,"data":"rpc: the caller's deadline passed"}` {
		t.Errorf("answer %q, %v", resp, err)
	}
	if w := recv(t, ended, "the handler's end"); !errors.Is(w.err, context.DeadlineExceeded) || !w.sent {
		t.Errorf("handler: %+v", w)
	}
}

// Over SRMP a call that ends past the deadline its caller sent gets no
// reply: the caller has given up, and would drop it.
func TestSRMPPastTheDeadlineGetsNoReply(t *testing.T) {
	srv, addr, ended, _ := deadlineServer(t, nil)
	rc := dialRaw(t, addr)
	rc.write(srmp(b0Request, 1, rawBody("Slow/Wait", `{"Timeout-Ms":50}`)))
	if w := recv(t, ended, "the handler's end"); !errors.Is(w.err, context.DeadlineExceeded) {
		t.Fatalf("handler: %+v", w)
	}
	must(t, srv.Shutdown(context.Background())) // waits for the call, writes what it sends, closes
	rc.expectEOF()
}

// A Timeout-Ms past what a time.Duration holds (292 years) is no
// deadline, as a malformed one is: it wrapped into one in the past,
// which dropped the call unanswered.
func TestHugeTimeoutMsIsNoDeadline(t *testing.T) {
	srv, err := rpc.NewServer(rpc.Config{})
	must(t, err)
	defer srv.Close()
	must(t, rpc.Handle(srv, "T/Deadline", func(ctx context.Context, _ struct{}) (bool, error) {
		_, has := ctx.Deadline()
		return has, nil
	}))
	for ms, want := range map[string]string{
		"9223372036854":       "True", // the longest a Duration holds
		"9223372036855":       "False",
		"10000000000000":      "False",
		"9223372036854775807": "False",
		`"99999999999999999"`: "False",
	} {
		reply, isErr, ok := srv.Process(context.Background(), rawBody("T/Deadline", `{"Timeout-Ms":`+ms+`}`), nil)
		if !ok || isErr || !strings.HasSuffix(string(reply), want) {
			t.Errorf("Timeout-Ms %s: reply %q (error %v, sent %v), want a deadline %s", ms, reply, isErr, ok, want)
		}
	}
}

// A client Timeout of math.MaxInt64 ("never") neither wraps the
// remaining time it sends nor the request's deadline: a call longer than
// the matcher's sweep answers, and the server gets a deadline decades
// away.
func TestClientTimeoutOfMaxInt64(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Slow/Left", func(ctx context.Context, _ struct{}) (int64, error) {
			time.Sleep(150 * time.Millisecond) // past a sweep of the matcher (50 ms)
			dl, ok := rpc.CallInfoFrom(ctx).Deadline()
			if !ok {
				return -1, nil
			}
			return int64(time.Until(dl) / time.Hour), nil
		}))
	})
	for _, send := range []bool{false, true} {
		cl := dialClient(t, addr, rpc.ClientConfig{Timeout: math.MaxInt64, SendTimeout: send})
		hours, err := rpc.Call[int64](context.Background(), cl, "Slow/Left", nil)
		want := int64(-1)
		if send {
			want = 100 * 365 * 24 // the server keeps what a Duration holds; the client sends its 292 years
		}
		if err != nil || (send && hours < want) || (!send && hours != want) {
			t.Errorf("SendTimeout %v: %d hours left, %v; want %s", send, hours, err, map[bool]string{false: "no deadline", true: "decades"}[send])
		}
	}
}
