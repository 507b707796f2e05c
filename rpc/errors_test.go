package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// codeServer answers Code/N with NewError(N, "msg N"), Code/Wrapped with
// an error wrapping ErrArgs, Code/Plain with a plain error, Code/Panic
// with a panic.
func codeServer(t *testing.T, cfg rpc.Config) string {
	t.Helper()
	_, addr := startServer(t, cfg, func(srv *rpc.Server) {
		for _, code := range []int{400, 401, 403, 404, 413, 418, 500, 503} {
			must(t, rpc.Handle(srv, fmt.Sprintf("Code/E%d", code), func(context.Context, struct{}) (int, error) {
				return 0, rpc.NewError(code, fmt.Sprintf("msg %d", code))
			}))
		}
		must(t, rpc.Handle(srv, "Code/Wrapped", func(context.Context, struct{}) (int, error) {
			return 0, fmt.Errorf("%w: id must be positive", rpc.ErrArgs)
		}))
		must(t, rpc.Handle(srv, "Code/Plain", func(context.Context, struct{}) (int, error) {
			return 0, errors.New("db: connection to 10.0.0.5:5432 refused")
		}))
		must(t, rpc.Handle(srv, "Code/Panic", func(context.Context, struct{}) (int, error) { panic("boom at 10.0.0.5") }))
	})
	return addr
}

// A client's error for an error reply matches the sentinel of its code
// with errors.Is, and errors.As still gives the code and the message;
// CodeOf gives the code.
func TestErrorsMatchTheirCodesSentinel(t *testing.T) {
	addr := codeServer(t, rpc.Config{})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	for _, tc := range []struct {
		code int
		is   error
	}{
		{400, rpc.ErrArgs}, {401, rpc.ErrUnauthorized}, {403, rpc.ErrForbidden}, {404, rpc.ErrNotFound},
		{413, rpc.ErrTooLarge}, {418, nil}, {500, rpc.ErrInternal}, {503, rpc.ErrUnavailable},
	} {
		_, err := rpc.Call[int](ctx, cl, fmt.Sprintf("Code/E%d", tc.code), nil)
		var ae *rpc.APIError
		if !errors.As(err, &ae) || ae.Code != tc.code || ae.Message != fmt.Sprintf("msg %d", tc.code) {
			t.Errorf("code %d: %v, want an APIError with the code and message", tc.code, err)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("code %d: errors.Is(%v, %v) is false", tc.code, err, tc.is)
		}
		if got := rpc.CodeOf(err); got != tc.code {
			t.Errorf("CodeOf(%v) = %d, want %d", err, got, tc.code)
		}
		if want := fmt.Sprintf("rpc: msg %d (%d)", tc.code, tc.code); err.Error() != want {
			t.Errorf("code %d: Error() = %q, want %q", tc.code, err.Error(), want)
		}
		for _, other := range []error{rpc.ErrArgs, rpc.ErrNotFound, rpc.ErrShutdown, rpc.ErrBusy, rpc.ErrTimeout} {
			if other != tc.is && errors.Is(err, other) {
				t.Errorf("code %d matches %v too", tc.code, other)
			}
		}
	}

	// An error wrapping a sentinel is answered with its code and text.
	_, err := rpc.Call[int](ctx, cl, "Code/Wrapped", nil)
	if !errors.Is(err, rpc.ErrArgs) || rpc.CodeOf(err) != 400 || !strings.Contains(err.Error(), "id must be positive") {
		t.Errorf("Code/Wrapped: %v, want a 400 matching ErrArgs with the handler's text", err)
	}
}

// The sentinels that share 503 are told apart by their message; local
// errors match no reply.
func TestErrorsSharedCodes(t *testing.T) {
	shut := &rpc.APIError{Code: 503, Message: rpc.ErrShutdown.Error()}
	busy := &rpc.APIError{Code: 503, Message: rpc.ErrBusy.Error()}
	other := &rpc.APIError{Code: 503, Message: "maintenance"}
	for _, tc := range []struct {
		err  error
		is   []error
		isnt []error
	}{
		{shut, []error{rpc.ErrShutdown, rpc.ErrUnavailable}, []error{rpc.ErrBusy, rpc.ErrNoServer, rpc.ErrClosed}},
		{busy, []error{rpc.ErrBusy, rpc.ErrUnavailable}, []error{rpc.ErrShutdown}},
		{other, []error{rpc.ErrUnavailable}, []error{rpc.ErrShutdown, rpc.ErrBusy, rpc.ErrNoServer}},
	} {
		for _, s := range tc.is {
			if !errors.Is(tc.err, s) {
				t.Errorf("%v does not match %v", tc.err, s)
			}
		}
		for _, s := range tc.isnt {
			if errors.Is(tc.err, s) {
				t.Errorf("%v matches %v", tc.err, s)
			}
		}
	}
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, rpc.CodeOK},
		{errors.New("x"), rpc.CodeInternal},
		{fmt.Errorf("wrapped: %w", rpc.ErrArgs), rpc.CodeBadRequest},
		{rpc.ErrShutdown, rpc.CodeUnavailable},
		{rpc.ErrTimeout, rpc.CodeTimeout},
		{context.DeadlineExceeded, rpc.CodeTimeout},
		{rpc.ErrConnClosed, rpc.CodeUnavailable},
		{rpc.ErrNoServer, rpc.CodeUnavailable},
		{fmt.Errorf("x: %w", rpc.NewError(418, "teapot")), 418},
	} {
		if got := rpc.CodeOf(tc.err); got != tc.code {
			t.Errorf("CodeOf(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
}

// An unknown action keeps NewLife's 404 text on the wire, and the caller's
// error names the action in English.
func TestErrorsUnknownActionNamedInEnglish(t *testing.T) {
	addr := codeServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	rc.write(srmp(b0Request, 1, body(t, "No/Such", nil)))
	f := rc.readFrame()
	if want := errBody("No/Such", 404, "无法找到名为[No/Such]的服务！"); f.b0 != b0Error || !bytes.Equal(f.payload, want) {
		t.Errorf("the 404 on the wire: %#x %q, want %#x %q (NewLife's)", f.b0, f.payload, b0Error, want)
	}

	cl := dialClient(t, addr, rpc.ClientConfig{})
	_, err := rpc.Call[int](context.Background(), cl, "No/Such", nil)
	if err == nil || err.Error() != `rpc: no action "No/Such" (404)` || !errors.Is(err, rpc.ErrNotFound) {
		t.Errorf("calling No/Such: %v, want `rpc: no action \"No/Such\" (404)` matching ErrNotFound", err)
	}

	_, err = rpc.Call[int](context.Background(), dialClient(t, "http://"+addr, rpc.ClientConfig{}), "No/Such", nil)
	if err == nil || err.Error() != `rpc: no action "No/Such" (404)` {
		t.Errorf("calling No/Such over HTTP: %v", err)
	}
}

// lockedBuffer is a log destination for a server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// By default a handler's plain error and a panic reach the caller as
// their code's generic text, and the server's log gets the detail;
// ExposeErrors sends the text (NewLife's way).
func TestErrorsTextStaysOnTheServer(t *testing.T) {
	var log lockedBuffer
	addr := codeServer(t, rpc.Config{Log: slog.New(slog.NewTextHandler(&log, nil))})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	for _, action := range []string{"Code/Plain", "Code/Panic"} {
		_, err := rpc.Call[int](ctx, cl, action, nil)
		var ae *rpc.APIError
		if !errors.As(err, &ae) || ae.Code != 500 || ae.Message != "Internal Server Error" || !errors.Is(err, rpc.ErrInternal) {
			t.Errorf("%s: %v, want 500 Internal Server Error", action, err)
		}
	}
	if l := log.String(); !strings.Contains(l, "db: connection to 10.0.0.5:5432 refused") || !strings.Contains(l, "boom at 10.0.0.5") {
		t.Errorf("the server's log lacks the errors' detail:\n%s", l)
	}

	addr = codeServer(t, rpc.Config{ExposeErrors: true})
	cl = dialClient(t, addr, rpc.ClientConfig{})
	for action, want := range map[string]string{"Code/Plain": "db: connection to 10.0.0.5:5432 refused", "Code/Panic": "boom at 10.0.0.5"} {
		_, err := rpc.Call[int](ctx, cl, action, nil)
		var ae *rpc.APIError
		if !errors.As(err, &ae) || ae.Code != 500 || ae.Message != want {
			t.Errorf("%s with ExposeErrors: %v, want 500 %q", action, err, want)
		}
	}
}
