package rpc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// healthz asks GET (or HEAD) /healthz on a fresh connection and returns
// the status line and body.
func healthz(t *testing.T, addr, method string) (status int, text string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	must(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testTimeout))
	fmt.Fprintf(conn, "%s /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", method)
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	must(t, err)
	fmt.Sscanf(line, "HTTP/1.1 %d", &status)
	var n int
	for {
		h, err := r.ReadString('\n')
		must(t, err)
		if h == "\r\n" {
			break
		}
		fmt.Sscanf(strings.ToLower(h), "content-length: %d", &n)
	}
	if method == "HEAD" {
		return status, fmt.Sprint(n)
	}
	b := make([]byte, n)
	_, err = r.Read(b)
	must(t, err)
	return status, string(b)
}

// Api/Health and GET /healthz answer whether the server is serving, to
// anyone: Authorize does not guard them, even with AuthorizeBuiltins.
// SetServing flips it (draining, warming up).
func TestHealthReportsServing(t *testing.T) {
	srv, addr := startServer(t, rpc.Config{
		AuthorizeBuiltins: true,
		Authorize:         func(context.Context, *rpc.Session, string) error { return rpc.ErrUnauthorized },
	}, nil)
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	if s, err := rpc.Call[string](ctx, cl, "Api/Health", nil); err != nil || s != "Serving" || !srv.Serving() {
		t.Errorf("Api/Health: %q, %v", s, err)
	}
	if _, err := rpc.Call[string](ctx, cl, "Api/Info", nil); !errors.Is(err, rpc.ErrUnauthorized) {
		t.Errorf("Api/Info is guarded: %v", err)
	}
	if st, text := healthz(t, addr, "GET"); st != 200 || text != "Serving" {
		t.Errorf("GET /healthz: %d %q", st, text)
	}
	if st, n := healthz(t, addr, "HEAD"); st != 200 || n != "7" {
		t.Errorf("HEAD /healthz: %d, length %s", st, n)
	}

	srv.SetServing(false)
	if _, err := rpc.Call[string](ctx, cl, "Api/Health", nil); !errors.Is(err, rpc.ErrNotServing) || !errors.Is(err, rpc.ErrUnavailable) || srv.Serving() {
		t.Errorf("Api/Health, draining: %v", err)
	}
	if st, text := healthz(t, addr, "GET"); st != 503 || text != "NotServing" {
		t.Errorf("GET /healthz, draining: %d %q", st, text)
	}
	srv.SetServing(true)
	if st, _ := healthz(t, addr, "GET"); st != 200 {
		t.Errorf("GET /healthz, serving again: %d", st)
	}
}

// Shutdown reports not serving first, while it waits for the calls in
// progress, and SetServing cannot undo it.
func TestShutdownStopsServingFirst(t *testing.T) {
	g := newGate(t, 1)
	srv, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Slow/Wait", func(ctx context.Context, _ struct{}) (string, error) { return "done", g.wait(ctx) }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	slow := make(chan error, 1)
	go func() { _, err := rpc.Call[string](context.Background(), cl, "Slow/Wait", nil); slow <- err }()
	recv(t, g.entered, "the slow call")
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	waitFor(t, "Shutdown to begin", func() bool { return !srv.Serving() })
	srv.SetServing(true)
	if st, text := healthz(t, addr, "GET"); st != 503 || text != "NotServing" {
		t.Errorf("GET /healthz during Shutdown: %d %q", st, text)
	}
	g.open()
	if err := recv(t, slow, "the slow call"); err != nil {
		t.Errorf("the call in progress: %v", err)
	}
	if err := recv(t, done, "Shutdown"); err != nil {
		t.Error(err)
	}
}

// NoBuiltins turns the health check off too.
func TestHealthIsABuiltin(t *testing.T) {
	_, addr := startServer(t, rpc.Config{NoBuiltins: true}, nil)
	cl := dialClient(t, addr, rpc.ClientConfig{})
	if _, err := rpc.Call[string](context.Background(), cl, "Api/Health", nil); !errors.Is(err, rpc.ErrNotFound) {
		t.Errorf("Api/Health with NoBuiltins: %v", err)
	}
	if st, text := healthz(t, addr, "GET"); st != 200 || !strings.Contains(text, `"code":404`) { // an unknown action, in the envelope
		t.Errorf("GET /healthz with NoBuiltins: %d %s", st, text)
	}
}
