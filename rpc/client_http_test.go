package rpc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
)

// An HTTP call that reached a server which then failed is not posted to
// the next server, where it would run twice: it fails with
// ErrConnClosed. A server that cannot be reached is failed over.
func TestHTTPFailoverOnlyWhenTheRequestNeverLeft(t *testing.T) {
	var ran1, ran2 atomic.Int32
	s1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		ran1.Add(1)
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close() // gone before answering
		}
	}))
	defer s1.Close()
	s2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		ran2.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"action":"Pay/Order","code":0,"data":true}`)
	}))
	defer s2.Close()
	ctx := context.Background()
	cl, err := rpc.Dial(ctx, s1.URL+","+s2.URL, rpc.ClientConfig{Timeout: testTimeout})
	must(t, err)
	defer cl.Close()
	var ok bool
	err = cl.Invoke(ctx, "Pay/Order", map[string]int{"amount": 100}, &ok)
	if !errors.Is(err, codec.ErrConnClosed) || ran1.Load() != 1 || ran2.Load() != 0 {
		t.Fatalf("a call the first server took and dropped: %v; ran %d and %d times, want ErrConnClosed, once and not at all", err, ran1.Load(), ran2.Load())
	}

	cl, err = rpc.Dial(ctx, "http://"+closedAddr(t)+","+s2.URL, rpc.ClientConfig{Timeout: testTimeout})
	must(t, err)
	defer cl.Close()
	if err := cl.Invoke(ctx, "Pay/Order", map[string]int{"amount": 100}, &ok); err != nil || !ok || ran2.Load() != 1 {
		t.Fatalf("failing over from a server that is down: %v, %v; ran %d times on the second", err, ok, ran2.Load())
	}
}

// An HTTP call cut short by its context returns the context's error; the
// client's own Timeout is codec.ErrTimeout.
func TestHTTPCallEndsWithItsContextsError(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer s.Close()
	defer close(release)
	cl, err := rpc.Dial(context.Background(), s.URL, rpc.ClientConfig{Timeout: 100 * time.Millisecond})
	must(t, err)
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := cl.Invoke(ctx, "Slow/Op", nil, nil); !errors.Is(err, context.Canceled) || errors.Is(err, codec.ErrTimeout) {
		t.Errorf("a cancelled HTTP call: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := cl.Invoke(ctx, "Slow/Op", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an HTTP call past its context's deadline: %v, want context.DeadlineExceeded", err)
	}
	if err := cl.Invoke(context.Background(), "Slow/Op", nil, nil); !errors.Is(err, codec.ErrTimeout) {
		t.Errorf("an HTTP call past the client's Timeout: %v, want codec.ErrTimeout", err)
	}
}

// The client's Timeout bounds an HTTP call whose context has a later
// deadline, as it does over SRMP, and so does it a body that stops half
// way: both fail with rpc.ErrTimeout and are not posted to another server,
// where they would run again.
func TestHTTPClientTimeoutUnderALaterDeadline(t *testing.T) {
	release := make(chan struct{})
	var ran atomic.Int32
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran.Add(1)
		if r.URL.Path == "/Half/Body" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, `{"action":"Half/Body",`)
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	s1, s2 := httptest.NewServer(slow), httptest.NewServer(slow)
	defer s1.Close()
	defer s2.Close()
	defer close(release)
	cl, err := rpc.Dial(context.Background(), s1.URL+","+s2.URL, rpc.ClientConfig{Timeout: 100 * time.Millisecond})
	must(t, err)
	defer cl.Close()
	for _, action := range []string{"Slow/Op", "Half/Body"} {
		ran.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		err := cl.Invoke(ctx, action, nil, nil)
		cancel()
		if !errors.Is(err, rpc.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || ran.Load() != 1 || time.Since(start) > 5*time.Second {
			t.Errorf("%s under a 10 s deadline, Timeout 100 ms: %v after %v, ran %d times; want ErrTimeout (and DeadlineExceeded) at the Timeout, once",
				action, err, time.Since(start), ran.Load())
		}
	}
}
