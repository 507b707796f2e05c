package rpc_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// loginServer answers Doc/Read with "secret" to a session whose token is
// "t1" and refuses others with 401, Doc/Gone with 404 to anyone, and
// Doc/Hello with "hi" (a call whose Token argument sets the session's).
func loginServer(t *testing.T) string {
	t.Helper()
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Doc/Read", func(ctx context.Context, _ struct{}) (string, error) {
			if rpc.SessionFrom(ctx).Token() != "t1" {
				return "", rpc.NewError(rpc.CodeUnauthorized, "who are you")
			}
			return "secret", nil
		}))
		must(t, rpc.Handle(srv, "Doc/Hello", func(context.Context, struct{}) (string, error) { return "hi", nil }))
		must(t, rpc.Handle(srv, "Doc/Gone", func(context.Context, struct{}) (string, error) {
			return "", rpc.NewError(404, "gone")
		}))
	})
	return addr
}

// A call refused with 401 runs Login once and is retried once, carrying
// the token Login set.
func TestLoginRunsOnUnauthorizedAndRetriesOnce(t *testing.T) {
	addr := loginServer(t)
	var logins atomic.Int32
	cl := dialClient(t, addr, rpc.ClientConfig{Login: func(ctx context.Context, c *rpc.Client) error {
		logins.Add(1)
		c.SetToken("t1")
		return c.Invoke(ctx, "Doc/Hello", struct{}{}, nil)
	}})
	ctx := context.Background()
	if s, err := rpc.Call[string](ctx, cl, "Doc/Read", nil); err != nil || s != "secret" {
		t.Fatalf("Doc/Read: %q, %v; want secret after a login", s, err)
	}
	if s, err := rpc.Call[string](ctx, cl, "Doc/Read", nil); err != nil || s != "secret" {
		t.Fatalf("Doc/Read again: %q, %v", s, err)
	}
	if _, err := rpc.Call[string](ctx, cl, "Doc/Gone", nil); apiCode(err) != 404 {
		t.Fatalf("Doc/Gone: %v, want 404", err)
	}
	if n := logins.Load(); n != 1 {
		t.Errorf("Login ran %d times, want once (for the first 401 only)", n)
	}
}

// An interceptor around a call that Login retried sees, once next
// returns, the token the call went again with.
func TestInterceptorSeesTheTokenAfterLogin(t *testing.T) {
	addr := loginServer(t)
	tokens := make(chan [2]string, 1)
	see := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		before := c.Info().Token()
		err := next(ctx, c)
		if c.Action() == "Doc/Read" {
			tokens <- [2]string{before, c.Info().Token()}
		}
		return err
	}
	cl := dialClient(t, addr, rpc.ClientConfig{Token: "t0", Interceptors: []rpc.Interceptor{see}, Login: func(ctx context.Context, c *rpc.Client) error {
		c.SetToken("t1")
		return c.Invoke(ctx, "Doc/Hello", struct{}{}, nil)
	}})
	if _, err := rpc.Call[string](context.Background(), cl, "Doc/Read", nil); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, tokens, "the interceptor's tokens"); got != [2]string{"t0", "t1"} {
		t.Errorf("tokens before and after next %q, want t0 then t1", got)
	}
}

// A Login that fails returns both errors; one that does not help leaves the
// retry's 401, and Login is not run a second time for the same call.
func TestLoginFailureAndUselessLogin(t *testing.T) {
	addr := loginServer(t)
	errLogin := errors.New("no credentials")
	cl := dialClient(t, addr, rpc.ClientConfig{Login: func(context.Context, *rpc.Client) error { return errLogin }})
	_, err := rpc.Call[string](context.Background(), cl, "Doc/Read", nil)
	var ae *rpc.APIError
	if !errors.Is(err, errLogin) || !errors.As(err, &ae) || ae.Code != rpc.CodeUnauthorized {
		t.Fatalf("Doc/Read with a failing Login: %v, want the 401 joined with the login's error", err)
	}

	var logins atomic.Int32
	cl = dialClient(t, addr, rpc.ClientConfig{Login: func(context.Context, *rpc.Client) error {
		logins.Add(1)
		return nil // the token stays wrong
	}})
	if _, err := rpc.Call[string](context.Background(), cl, "Doc/Read", nil); apiCode(err) != rpc.CodeUnauthorized {
		t.Fatalf("Doc/Read after a useless Login: %v, want 401", err)
	}
	if n := logins.Load(); n != 1 {
		t.Errorf("Login ran %d times for one call, want 1", n)
	}
}

// A Login whose own call is refused with 401 fails that call; it does not
// run Login again (for ever, with a context that never ends).
func TestLoginRefusedDoesNotRecurse(t *testing.T) {
	addr := loginServer(t)
	var logins atomic.Int32
	cl := dialClient(t, addr, rpc.ClientConfig{Login: func(ctx context.Context, c *rpc.Client) error {
		if logins.Add(1) > 5 {
			return errors.New("test: Login recursed")
		}
		return c.Invoke(ctx, "Doc/Read", struct{}{}, nil) // refused: the token is still wrong
	}})
	_, err := rpc.Call[string](context.Background(), cl, "Doc/Read", nil)
	if apiCode(err) != rpc.CodeUnauthorized {
		t.Errorf("Doc/Read: %v, want 401", err)
	}
	if n := logins.Load(); n != 1 {
		t.Errorf("Login ran %d times for one call, want 1", n)
	}
}
