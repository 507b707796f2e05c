package rpc_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// tokenServer answers Data/Get (no arguments), Data/Say (a string),
// Data/Num (an int), Data/Raw (bytes) and Data/List (an array) with the
// caller's session token, or refuses them with 401 unless the session's
// token is want (when want is set).
func tokenServer(t *testing.T, want string) string {
	t.Helper()
	check := func(ctx context.Context) (string, error) {
		tok := rpc.SessionFrom(ctx).Token()
		if want != "" && tok != want {
			return "", rpc.NewError(rpc.CodeUnauthorized, "login first")
		}
		return tok, nil
	}
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Data/Get", func(ctx context.Context, _ struct{}) (string, error) { return check(ctx) }))
		must(t, rpc.Handle(srv, "Data/Say", func(ctx context.Context, s string) (string, error) {
			tok, err := check(ctx)
			return tok + ":" + s, err
		}))
		must(t, rpc.Handle(srv, "Data/Num", func(ctx context.Context, n int) (string, error) {
			if n != 0 && n != 7 {
				return "", errors.New("bad number")
			}
			return check(ctx)
		}))
		must(t, rpc.Handle(srv, "Data/Raw", func(ctx context.Context, b []byte) (string, error) {
			if len(b) != 0 && string(b) != "\x01\x02" {
				return "", rpc.NewError(400, "the bytes are "+string(b))
			}
			return check(ctx)
		}))
		must(t, rpc.Handle(srv, "Data/List", func(ctx context.Context, l []int) (string, error) { return check(ctx) }))
	})
	return addr
}

// A call always carries the client's token: a call without arguments too,
// and one whose argument has no room for it (the token is shown first).
// A call without arguments binds no arguments on the server (the token
// object is not data: a bytes action gets none, a number action zero).
func TestTokenGoesWithEveryCall(t *testing.T) {
	addr := tokenServer(t, "")
	ctx := context.Background()
	for _, tc := range []struct {
		action string
		args   any
		want   string
	}{
		{"Data/Get", nil, "T1"},
		{"Data/Num", nil, "T1"},
		{"Data/Raw", nil, "T1"},
		{"Data/Say", nil, "T1:"},
		{"Data/Say", "hi", "T1:hi"},
		{"Data/Num", 7, "T1"},
		{"Data/Raw", []byte{1, 2}, "T1"},
		{"Data/List", []int{1}, "T1"},
	} {
		cl := dialClient(t, addr, rpc.ClientConfig{Token: "T1"}) // a new connection each: the first call shows the token
		if got, err := rpc.Call[string](ctx, cl, tc.action, tc.args); err != nil || got != tc.want {
			t.Errorf("%s(%v) with Token T1: %q, %v; want %q", tc.action, tc.args, got, err, tc.want)
		}
	}
	// Over HTTP the token goes as Authorization: Bearer.
	cl := dialClient(t, "http://"+addr, rpc.ClientConfig{Token: "T1"})
	if got, err := rpc.Call[string](ctx, cl, "Data/Get", nil); err != nil || got != "T1" {
		t.Errorf("Data/Get over HTTP: %q, %v; want T1", got, err)
	}
}

// ClientConfig.Login's retry succeeds on every argument shape, even when
// Login only sets the token and calls nothing.
func TestTokenLoginRetryOnEveryShape(t *testing.T) {
	addr := tokenServer(t, "T1")
	ctx := context.Background()
	for _, tc := range []struct {
		action string
		args   any
	}{
		{"Data/Get", nil},
		{"Data/Get", struct{}{}},
		{"Data/Say", "hi"},
		{"Data/Num", 7},
		{"Data/Raw", []byte{1, 2}},
		{"Data/List", []int{1}},
	} {
		var logins atomic.Int32
		cl := dialClient(t, addr, rpc.ClientConfig{Login: func(_ context.Context, c *rpc.Client) error {
			logins.Add(1)
			c.SetToken("T1")
			return nil
		}})
		if _, err := rpc.Call[string](ctx, cl, tc.action, tc.args); err != nil || logins.Load() != 1 {
			t.Errorf("%s(%v): %v after %d logins; want success after one", tc.action, tc.args, err, logins.Load())
		}
		if _, err := rpc.Call[string](ctx, cl, tc.action, tc.args); err != nil || logins.Load() != 1 {
			t.Errorf("%s(%v) again: %v after %d logins; want success, no more logins", tc.action, tc.args, err, logins.Load())
		}
	}
}
