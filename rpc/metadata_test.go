package rpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// A client merges its context's metadata into the argument object as
// NewLife merges ApiClient.Headers: after Token and the headers, in the
// order added, not over a key the object has (in any case), into an object
// made for a call without arguments, and not at all for a bare value,
// bytes or an array.
func TestClientSendsMetadataAsNewLifeHeaders(t *testing.T) {
	got := make(chan string, 8)
	addr := fakeServer(t, func(f frame) []byte {
		action, data := splitBody(f.payload)
		got <- data
		return srmp(b0Reply, f.seq, body(t, action, "1"))
	})
	ctx := rpc.AppendToOutgoingContext(context.Background(), "Tenant", "acme", "Region", "eu")
	ctx = rpc.AppendToOutgoingContext(ctx, "tenant", "other") // the first value of a key is the one sent
	for _, c := range []struct {
		cfg  rpc.ClientConfig
		args any
		want string
	}{
		{rpc.ClientConfig{}, addArgs{A: 1, B: 2}, `{"a":1,"b":2,"Tenant":"acme","Region":"eu"}`},
		{rpc.ClientConfig{Token: "t1", Headers: map[string]string{"App": "x"}}, addArgs{A: 1}, `{"a":1,"b":0,"Token":"t1","App":"x","Tenant":"acme","Region":"eu"}`},
		{rpc.ClientConfig{}, map[string]string{"TENANT": "mine"}, `{"TENANT":"mine","Region":"eu"}`},
		{rpc.ClientConfig{Headers: map[string]string{"App": "x"}}, nil, `{"Tenant":"acme","Region":"eu"}`}, // headers go in argument objects only, as NewLife's
		{rpc.ClientConfig{}, "bare", `bare`},
		{rpc.ClientConfig{}, []byte{1, 2}, "\x01\x02"},
		{rpc.ClientConfig{}, []string{"a"}, `["a"]`},
	} {
		cl := dialClient(t, addr, c.cfg)
		if err := cl.Invoke(ctx, "Bench/Add", c.args, nil); err != nil {
			t.Fatal(err)
		}
		if g := recv(t, got, "the request"); g != c.want {
			t.Errorf("%+v %#v:\n got %s\nwant %s", c.cfg, c.args, g, c.want)
		}
	}
	md := rpc.OutgoingMetadata(ctx)
	if len(md) != 3 || md["Tenant"] != "acme" || md["tenant"] != "other" || md.Get("region") != "eu" {
		t.Errorf("OutgoingMetadata = %v", md)
	}
	if rpc.OutgoingMetadata(context.Background()) != nil {
		t.Error("metadata from nowhere")
	}
}

// Metadata round trip: a lifenet client's metadata reaches a lifenet
// server's handler, which names its keys in Config.MetadataKeys; a
// single-value action still binds, and the reserved keys are metadata
// too.
func TestMetadataRoundTrip(t *testing.T) {
	type seen struct {
		in string
		md rpc.Metadata
	}
	got := make(chan seen, 4)
	_, addr := startServer(t, rpc.Config{MetadataKeys: []string{"Tenant"}}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Echo/Say", func(ctx context.Context, in string) (string, error) {
			got <- seen{in, rpc.CallInfoFrom(ctx).Metadata()}
			return in, nil
		}))
		must(t, rpc.Handle(s, "Echo/Struct", func(ctx context.Context, a struct{ Input, Tenant string }) (string, error) {
			return a.Input + "@" + a.Tenant, nil
		}))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := rpc.AppendToOutgoingContext(context.Background(), "tenant", "acme")
	tc := rpc.TraceContext{TraceID: nlTrace, SpanID: nlSpan, Flags: 1}
	r, err := rpc.Call[string](rpc.WithTraceContext(ctx, tc), cl, "Echo/Say", map[string]string{"input": "x"})
	if err != nil || r != "x" {
		t.Fatalf("Echo/Say: %q, %v", r, err)
	}
	s := recv(t, got, "the handler")
	if s.in != "x" || s.md.Get("Tenant") != "acme" || s.md.Get("traceparent") != tc.String() || len(s.md) != 2 {
		t.Errorf("handler got %q with %v", s.in, s.md)
	}
	// A struct binds a field of a metadata key's name, as NewLife binds a class from the whole dictionary.
	if r, err := rpc.Call[string](ctx, cl, "Echo/Struct", map[string]string{"input": "y"}); err != nil || r != "y@acme" {
		t.Errorf("Echo/Struct: %q, %v", r, err)
	}
	// No metadata: the handler's Metadata is nil.
	if _, err := rpc.Call[string](context.Background(), cl, "Echo/Say", map[string]string{"input": "z"}); err != nil {
		t.Fatal(err)
	}
	if s := recv(t, got, "the handler"); s.md != nil {
		t.Errorf("metadata of a call that has none: %v", s.md)
	}
}

// A server that does not name a key takes it for an argument: a
// single-value action called with it and a value has two entries.
func TestUnnamedMetadataIsAnArgument(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Echo/Say", func(ctx context.Context, in string) (string, error) { return in, nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := rpc.AppendToOutgoingContext(context.Background(), "Tenant", "acme")
	if _, err := rpc.Call[string](ctx, cl, "Echo/Say", map[string]string{"input": "x"}); !errors.Is(err, rpc.ErrArgs) {
		t.Errorf("got %v, want ErrArgs", err)
	}
}

func TestAppendToOutgoingContextPanicsOnAnOddList(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	odd := strings.Fields("lonely") // (a literal would not pass vet)
	rpc.AppendToOutgoingContext(context.Background(), odd...)
}
