package rpc_test

import (
	"context"
	"net"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// What a handler finds in its context: the call (action as called, kind,
// token) and the session (its addresses and protocol), over each of the
// port's protocols and UDP.
func TestHandlerContextCarriesTheCall(t *testing.T) {
	type seen struct {
		action, token string
		kind          rpc.CallKind
		proto         rpc.Protocol
		local, remote net.Addr
		same          bool // CallInfo's session is SessionFrom's
	}
	got := make(chan seen, 1)
	_, addr := startServerUDP(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Info/Who", func(ctx context.Context, _ struct{}) (string, error) {
			ci := rpc.CallInfoFrom(ctx)
			ss := ci.Session()
			got <- seen{ci.Action(), ci.Token(), ci.Kind(), ci.Protocol(), ss.LocalAddr(), ss.RemoteAddr(), ss == rpc.SessionFrom(ctx)}
			return "ok", nil
		}))
	})
	for _, c := range []struct {
		url   string
		proto rpc.Protocol
	}{
		{"tcp://" + addr, rpc.ProtoSRMP},
		{"http://" + addr, rpc.ProtoHTTP},
		{"ws://" + addr + "/", rpc.ProtoWebSocket},
		{"udp://" + addr, rpc.ProtoUDP},
	} {
		cl := dialClient(t, c.url, rpc.ClientConfig{Token: "t-" + c.proto.String()})
		if _, err := rpc.Call[string](context.Background(), cl, "info/WHO", nil); err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		s := recv(t, got, "the handler")
		if s.action != "info/WHO" || s.kind != rpc.KindUnary || s.proto != c.proto || s.token != "t-"+c.proto.String() || !s.same {
			t.Errorf("%s: %+v", c.url, s)
		}
		if s.local == nil || s.remote == nil || s.local.String() == s.remote.String() {
			t.Errorf("%s: local %v, remote %v", c.url, s.local, s.remote)
		}
	}
	for p, want := range map[rpc.Protocol]string{rpc.ProtoSRMP: "SRMP", rpc.ProtoHTTP: "HTTP", rpc.ProtoWebSocket: "WebSocket", rpc.ProtoUDP: "UDP", 0: "undecided"} {
		if p.String() != want {
			t.Errorf("%d: %s", p, p)
		}
	}
}

// Server.Process gives its handler no call unless something makes one (a
// trace context, a deadline, metadata, interceptors): the direct path
// allocates nothing for it.
func TestProcessCallInfo(t *testing.T) {
	got := make(chan *rpc.CallInfo, 1)
	srv, err := rpc.NewServer(rpc.Config{Log: quietLog()})
	must(t, err)
	defer srv.Close()
	must(t, rpc.Handle(srv, "Info/Who", func(ctx context.Context, _ struct{}) (string, error) {
		got <- rpc.CallInfoFrom(ctx)
		return "ok", nil
	}))
	srv.Process(context.Background(), body(t, "Info/Who", nil), nil)
	if ci := recv(t, got, "the handler"); ci != nil {
		t.Errorf("plain call: %+v", ci)
	}
	srv.Process(context.Background(), rawBody("Info/Who", `{"Token":"t","traceparent":"00-`+nlTrace+`-`+nlSpan+`-01"}`), nil)
	ci := recv(t, got, "the handler")
	if tc, ok := ci.Trace(); ci == nil || !ok || tc.TraceID != nlTrace || ci.Token() != "t" || ci.Session() != nil || ci.Protocol() != 0 {
		t.Errorf("traced call: %+v", ci)
	}
}
