package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

type pairArgs struct {
	A int
	B int
}

// The binding rules seen from a client: what a handler gets for the
// arguments a NewLife client may send.
func TestBatteryBindingOverTheWire(t *testing.T) {
	gotBytes := make(chan []byte, 1)
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Bind/Pair", func(_ context.Context, a pairArgs) (int, error) { return a.A*10 + a.B, nil }))
		must(t, rpc.Handle(srv, "Bind/Double", func(_ context.Context, n int) (int, error) { return 2 * n, nil }))
		must(t, rpc.Handle(srv, "Bind/Echo", func(_ context.Context, s string) (string, error) { return "<" + s + ">", nil }))
		must(t, rpc.Handle(srv, "Bind/Raw", func(_ context.Context, b []byte) (int, error) {
			gotBytes <- bytes.Clone(b)
			return len(b), nil
		}))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	ints := []struct {
		action string
		args   any
		want   int
	}{
		{"Bind/Pair", json.RawMessage(`{"A":1,"b":2}`), 12},
		{"Bind/Pair", json.RawMessage(`{"a":"1","B":"2"}`), 12},
		{"Bind/Pair", map[string]any{"a": 3}, 30},
		{"Bind/Pair", pairArgs{4, 5}, 45},
		{"Bind/Pair", nil, 0},
		{"Bind/Double", "5", 10},
		{"Bind/Double", 6, 12},
		{"Bind/Double", json.RawMessage(`{"n":7}`), 14},
		{"Bind/Double", json.RawMessage(`{"Token":"tok","n":"8"}`), 16},
	}
	for _, c := range ints {
		got, err := rpc.Call[int](ctx, cl, c.action, c.args)
		if err != nil || got != c.want {
			t.Errorf("%s %v: %d, %v; want %d", c.action, c.args, got, err, c.want)
		}
	}
	strs := []struct {
		args any
		want string
	}{
		{"x", "<x>"},
		{json.RawMessage(`{"input":"x"}`), "<x>"},
		{json.RawMessage(`{"input":"y","Token":"t"}`), "<y>"},
		{map[string]string{"Token": "t", "input": "z"}, "<z>"},
		{"", "<>"},
	}
	for _, c := range strs {
		got, err := rpc.Call[string](ctx, cl, "Bind/Echo", c.args)
		if err != nil || got != c.want {
			t.Errorf("Bind/Echo %v: %q, %v; want %q", c.args, got, err, c.want)
		}
	}
	for _, raw := range [][]byte{{0, 1, 2, 0xff}, []byte(`{"a":1}`), []byte("text")} {
		n, err := rpc.Call[int](ctx, cl, "Bind/Raw", raw)
		if err != nil || n != len(raw) {
			t.Errorf("Bind/Raw % X: %d, %v", raw, n, err)
			continue
		}
		if got := recv(t, gotBytes, "Bind/Raw's argument"); !bytes.Equal(got, raw) {
			t.Errorf("Bind/Raw got % X, sent % X", got, raw)
		}
	}
	bad := []struct {
		action string
		args   any
	}{
		{"Bind/Pair", json.RawMessage(`{"a":"one"}`)},
		{"Bind/Pair", json.RawMessage(`[1,2]`)},
		{"Bind/Pair", json.RawMessage(`{"a":`)},
		{"Bind/Double", "five"},
		{"Bind/Double", json.RawMessage(`{"a":1,"b":2}`)},
		{"Bind/Double", 1.5},
	}
	for _, c := range bad {
		_, err := rpc.Call[int](ctx, cl, c.action, c.args)
		if apiCode(err) != rpc.CodeBadRequest {
			t.Errorf("%s %s: %v, want an APIError 400", c.action, c.args, err)
		}
	}
	// The connection survives bad arguments.
	if n, err := rpc.Call[int](ctx, cl, "Bind/Double", 21); err != nil || n != 42 {
		t.Errorf("after the bad calls: %d, %v", n, err)
	}
}

// Results decode on the client as NewLife's client decodes them.
// Reserved keys stay in the data (PROTOCOL.md §5.2a): a struct with a
// field of one's name binds it, also from an object of reserved keys alone
// (a client's token merged into a call without arguments), while for a
// primitive parameter such an object is no arguments.
func TestReservedKeysBindAFieldOfTheirName(t *testing.T) {
	type tokenArgs struct{ Token string }
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Bind/Token", func(_ context.Context, a tokenArgs) (string, error) { return "<" + a.Token + ">", nil }))
		must(t, rpc.Handle(srv, "Bind/Echo", func(_ context.Context, s string) (string, error) { return "<" + s + ">", nil }))
	})
	ctx := context.Background()
	plain := dialClient(t, addr, rpc.ClientConfig{})
	withToken := dialClient(t, addr, rpc.ClientConfig{Token: "t2"})
	for _, c := range []struct {
		cl     *rpc.Client
		action string
		args   any
		want   string
	}{
		{plain, "Bind/Token", json.RawMessage(`{"Token":"t1"}`), "<t1>"},
		{plain, "Bind/Token", json.RawMessage(`{"Token":"t1","x":1}`), "<t1>"},
		{withToken, "Bind/Token", nil, "<t2>"},
		{plain, "Bind/Echo", json.RawMessage(`{"Token":"t1"}`), "<>"},
		{withToken, "Bind/Echo", nil, "<>"},
	} {
		if got, err := rpc.Call[string](ctx, c.cl, c.action, c.args); err != nil || got != c.want {
			t.Errorf("%s %s: %q, %v; want %q", c.action, c.args, got, err, c.want)
		}
	}
}

func TestBatteryResultDecoding(t *testing.T) {
	type item struct {
		ID   int
		Name string
	}
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "R/Bool", func(context.Context, struct{}) (bool, error) { return true, nil }))
		must(t, rpc.Handle(srv, "R/Float", func(context.Context, struct{}) (float64, error) { return 2.5, nil }))
		must(t, rpc.Handle(srv, "R/Item", func(context.Context, struct{}) (item, error) { return item{7, "seven"}, nil }))
		must(t, rpc.Handle(srv, "R/Nil", func(context.Context, struct{}) (*item, error) { return nil, nil }))
		must(t, rpc.Handle(srv, "R/List", func(context.Context, struct{}) ([]int, error) { return []int{1, 2}, nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	if b, err := rpc.Call[bool](ctx, cl, "R/Bool", nil); err != nil || !b {
		t.Errorf("R/Bool: %v, %v", b, err)
	}
	if s, err := rpc.Call[string](ctx, cl, "R/Bool", nil); err != nil || s != "True" {
		t.Errorf("R/Bool as text: %q, %v; want True", s, err)
	}
	if f, err := rpc.Call[float64](ctx, cl, "R/Float", nil); err != nil || f != 2.5 {
		t.Errorf("R/Float: %v, %v", f, err)
	}
	if it, err := rpc.Call[item](ctx, cl, "R/Item", nil); err != nil || it != (item{7, "seven"}) {
		t.Errorf("R/Item: %+v, %v", it, err)
	}
	if it, err := rpc.Call[*item](ctx, cl, "R/Nil", nil); err != nil || it != nil {
		t.Errorf("R/Nil: %+v, %v; want nil", it, err)
	}
	if l, err := rpc.Call[[]int](ctx, cl, "R/List", nil); err != nil || len(l) != 2 || l[1] != 2 {
		t.Errorf("R/List: %v, %v", l, err)
	}
	var anyv any
	if err := cl.Invoke(ctx, "R/Item", nil, &anyv); err != nil {
		t.Fatal(err)
	}
	if m, ok := anyv.(map[string]any); !ok || m["Name"] != "seven" {
		t.Errorf("R/Item into any: %#v", anyv)
	}
	if err := cl.Invoke(ctx, "R/Item", nil, nil); err != nil {
		t.Errorf("a nil result pointer: %v", err)
	}
}
