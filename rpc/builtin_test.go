package rpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// Api/Info tells anyone the basic facts (NewLife's health check) and a
// session holding a token the server's uptime, port, online counts and
// counters, as NewLife's ApiController does.
func TestBuiltinInfoSplitsByToken(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, nil)
	ctx := context.Background()
	anon := dialClient(t, addr, rpc.ClientConfig{})
	info, err := rpc.Call[map[string]any](ctx, anon, "Api/Info", nil)
	must(t, err)
	for _, k := range []string{"Id", "Name", "Title", "FileVersion", "OS", "MachineName", "ApiVersion", "Time", "Remote", "LocalIP"} {
		if _, ok := info[k]; !ok {
			t.Errorf("anonymous Api/Info lacks %s: %v", k, info)
		}
	}
	for _, k := range []string{"Token", "Uptime", "Port", "Online", "MaxOnline", "Stat"} {
		if v, ok := info[k]; ok {
			t.Errorf("anonymous Api/Info tells %s = %v", k, v)
		}
	}

	authed := dialClient(t, addr, rpc.ClientConfig{Token: "t1"})
	info, err = rpc.Call[map[string]any](ctx, authed, "Api/Info", map[string]string{"state": "s"})
	must(t, err)
	for _, k := range []string{"Id", "Remote", "State", "Token", "Uptime", "Port", "Online", "MaxOnline", "Stat"} {
		if _, ok := info[k]; !ok {
			t.Errorf("Api/Info with a token lacks %s: %v", k, info)
		}
	}
	if up, _ := info["Uptime"].(string); !strings.HasPrefix(up, "00:00:") || info["Token"] != "t1" || info["State"] != "s" {
		t.Errorf("Uptime %q (want .NET's TimeSpan form), Token %v, State %v", up, info["Token"], info["State"])
	}
	if n, _ := info["Online"].(float64); n < 2 {
		t.Errorf("Online %v, want the two clients", info["Online"])
	}
}

// The built-ins can be turned off, replaced, or put behind Authorize.
func TestBuiltinsOffReplacedAuthorized(t *testing.T) {
	ctx := context.Background()
	_, addr := startServer(t, rpc.Config{NoBuiltins: true}, nil)
	cl := dialClient(t, addr, rpc.ClientConfig{})
	for _, action := range []string{"Api/All", "Api/Info"} {
		if _, err := rpc.Call[any](ctx, cl, action, nil); !errors.Is(err, rpc.ErrNotFound) {
			t.Errorf("%s with NoBuiltins: %v, want 404", action, err)
		}
	}

	_, addr = startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Api/Info", func(context.Context, struct{}) (string, error) { return "mine", nil }))
		if err := rpc.Handle(srv, "api/info", func(context.Context, struct{}) (string, error) { return "again", nil }); !errors.Is(err, rpc.ErrDuplicate) {
			t.Errorf("replacing the replacement: %v, want ErrDuplicate", err)
		}
	})
	cl = dialClient(t, addr, rpc.ClientConfig{})
	if s, err := rpc.Call[string](ctx, cl, "Api/Info", nil); err != nil || s != "mine" {
		t.Errorf("a replaced Api/Info: %q, %v", s, err)
	}
	all, err := rpc.Call[[]string](ctx, cl, "Api/All", nil)
	if err != nil || len(all) != 3 || !strings.Contains(all[2], "Api/Info") || strings.Contains(all[2], "Object") {
		t.Errorf("Api/All after the replacement: %q, %v", all, err)
	}

	deny := func(_ context.Context, s *rpc.Session, action string) error {
		if s.Token() == "" {
			return rpc.NewError(rpc.CodeUnauthorized, "token please")
		}
		return nil
	}
	for _, tc := range []struct {
		cfg  rpc.Config
		want error
	}{
		{rpc.Config{Authorize: deny}, nil},
		{rpc.Config{Authorize: deny, AuthorizeBuiltins: true}, rpc.ErrUnauthorized},
	} {
		_, addr = startServer(t, tc.cfg, nil)
		cl = dialClient(t, addr, rpc.ClientConfig{})
		for _, action := range []string{"Api/All", "Api/Info"} {
			if _, err := rpc.Call[any](ctx, cl, action, nil); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("%s, AuthorizeBuiltins %v: %v, want %v", action, tc.cfg.AuthorizeBuiltins, err, tc.want)
			}
		}
	}
}
