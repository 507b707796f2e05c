package rpc_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// NewLife's trace IDs have 30 characters (ipv4 hex, Unix ms, a sequence,
// 'e', the pid), not W3C's 32 hex digits; spans have 16.
const (
	nlTrace   = "0a0000051785888000123000ae1f2c"
	nlSpan    = "0a0000051f2c0002" // the rpc span of the call (traceparent)
	nlCurrent = "0a0000051f2c0001" // the caller's ambient span (TraceId)
)

// rawBody is an RPC request body with data as it is: what a NewLife
// client's encoder writes.
func rawBody(action, data string) []byte {
	b := append([]byte{byte(len(action))}, action...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// traceServer serves Echo/Say (a string), Echo/Twice (an int) and
// Echo/None (no arguments), each reporting its context's trace.
func traceServer(t *testing.T, cfg rpc.Config) (string, <-chan rpc.TraceContext) {
	seen := make(chan rpc.TraceContext, 8)
	report := func(ctx context.Context) {
		tc, ok := rpc.TraceContextFrom(ctx)
		if !ok {
			tc = rpc.TraceContext{TraceID: "(none)"}
		}
		seen <- tc
	}
	_, addr := startServer(t, cfg, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Echo/Say", func(ctx context.Context, in string) (string, error) { report(ctx); return in, nil }))
		must(t, rpc.Handle(s, "Echo/Twice", func(ctx context.Context, n int) (int, error) { report(ctx); return 2 * n, nil }))
		must(t, rpc.Handle(s, "Echo/None", func(ctx context.Context, _ struct{}) (string, error) { report(ctx); return "ok", nil }))
	})
	return addr, seen
}

// A NewLife client with a token, a tracer and a current span sends its
// object arguments with Token, TraceId (its ambient span) and traceparent
// (the call's span) merged in, in that order (ApiClient.InvokeWithClientAsync,
// ISpan.Attach). A single-value action binds its one other entry, and the
// handler gets the caller's trace context from traceparent.
func TestNewLifeTraceContextReachesASingleValueAction(t *testing.T) {
	addr, seen := traceServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	extra := `"Token":"t1","TraceId":"00-` + nlTrace + `-` + nlCurrent + `-00","traceparent":"00-` + nlTrace + `-` + nlSpan + `-01"`
	want := rpc.TraceContext{TraceID: nlTrace, SpanID: nlSpan, Flags: 1}
	for i, c := range []struct{ action, data, reply string }{
		{"Echo/Say", `{"input":"x",` + extra + `}`, "x"},
		{"Echo/Twice", `{"n":21,` + extra + `}`, "42"},
		{"Echo/Say", `{"input":"x","traceparent":"00-` + nlTrace + `-` + nlSpan + `-01"}`, "x"}, // the bytes
		{"Echo/None", `{` + extra + `}`, "ok"},
	} {
		rc.write(srmp(b0Request, byte(i+1), rawBody(c.action, c.data)))
		f := rc.readFrame()
		if f.b0 != b0Reply || string(f.payload) != string(body(t, c.action, c.reply)) {
			t.Fatalf("%s %s: got %#x %q, want the reply %q", c.action, c.data, f.b0, f.payload, c.reply)
		}
		if tc := recv(t, seen, "the handler's trace"); tc != want {
			t.Errorf("%s: trace %+v, want %+v", c.data, tc, want)
		}
	}
}

// Without traceparent, the server reads NewLife's other keys, as its
// SpanExtension.Detach does: Request-Id, Eagleeye-Traceid, then TraceId
// (a span's text, or a bare trace ID), each in any case.
func TestTraceContextFallbackKeys(t *testing.T) {
	addr, seen := traceServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	for i, c := range []struct {
		data string
		want rpc.TraceContext
	}{
		{`{"input":"x","TraceId":"00-` + nlTrace + `-` + nlCurrent + `-00"}`, rpc.TraceContext{TraceID: nlTrace, SpanID: nlCurrent}},
		{`{"input":"x","traceid":"` + nlTrace + `"}`, rpc.TraceContext{TraceID: nlTrace}},
		{`{"input":"x","Request-Id":"|` + nlTrace + `.` + nlSpan + `_"}`, rpc.TraceContext{TraceID: nlTrace, SpanID: nlSpan}},
		{`{"input":"x","Eagleeye-Traceid":"` + nlTrace + `-` + nlSpan + `"}`, rpc.TraceContext{TraceID: nlTrace, SpanID: nlSpan}},
		{`{"TraceId":"bare","input":"x","TRACEPARENT":"00-` + nlTrace + `-` + nlSpan + `-03"}`, rpc.TraceContext{TraceID: nlTrace, SpanID: nlSpan, Flags: 3}},
		{`{"input":"x"}`, rpc.TraceContext{TraceID: "(none)"}},
		// IDs held to visible ASCII, whichever key brings them.
		{`{"input":"x","Request-Id":"|ab\ncd.` + nlSpan + `_"}`, rpc.TraceContext{TraceID: "(none)"}},
		{`{"input":"x","Eagleeye-Traceid":"` + nlTrace + `-ab\u0007"}`, rpc.TraceContext{TraceID: "(none)"}},
	} {
		rc.write(srmp(b0Request, byte(i+1), rawBody("Echo/Say", c.data)))
		if f := rc.readFrame(); f.b0 != b0Reply || string(f.payload) != string(body(t, "Echo/Say", "x")) {
			t.Fatalf("%s: got %#x %q", c.data, f.b0, f.payload)
		}
		if tc := recv(t, seen, "the handler's trace"); tc != c.want {
			t.Errorf("%s: trace %+v, want %+v", c.data, tc, c.want)
		}
	}
}

func TestParseTraceContext(t *testing.T) {
	for in, want := range map[string]rpc.TraceContext{
		"00-" + nlTrace + "-" + nlSpan + "-01":                    {TraceID: nlTrace, SpanID: nlSpan, Flags: 1},
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": {TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Flags: 1},
		nlTrace:                                  {TraceID: nlTrace},
		"00-" + nlTrace + "-" + nlSpan + "-zz":   {TraceID: nlTrace, SpanID: nlSpan},
		" 00-" + nlTrace + "-" + nlSpan + "-ff ": {TraceID: nlTrace, SpanID: nlSpan, Flags: 0xff},
	} {
		if got, ok := rpc.ParseTraceContext(in); !ok || got != want {
			t.Errorf("ParseTraceContext(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"",
		"00-ab\ncd-ef-01",              // a control character: it would break every HTTP call that carries it on
		"00-" + nlTrace + "-ab\rcd-01", // in the span ID too
		"00-ab cd-ef-01",
		"00-" + nlTrace + "\x7f-" + nlSpan + "-01",
		"00-\u00e9t\u00e9-" + nlSpan + "-01",
		"00-" + strings.Repeat("a", 129) + "-" + nlSpan + "-01",
		"00-" + nlTrace + "-" + strings.Repeat("b", 129) + "-01",
	} {
		if tc, ok := rpc.ParseTraceContext(in); ok {
			t.Errorf("ParseTraceContext(%q) = %+v: want no trace context", in, tc)
		}
	}
	if tc, ok := rpc.ParseTraceContext("00-" + strings.Repeat("a", 128) + "--01"); !ok || len(tc.TraceID) != 128 || tc.SpanID != "" {
		t.Errorf("a 128-character trace ID without a span: %+v, %v", tc, ok)
	}
	tc := rpc.TraceContext{TraceID: nlTrace, SpanID: nlSpan, Flags: 1}
	if s := tc.String(); s != "00-"+nlTrace+"-"+nlSpan+"-01" {
		t.Errorf("String() = %q", s)
	}
}

// A lifenet client sends its context's trace context as NewLife's tracer
// does: "traceparent", after Token and the headers, in an argument object
// (the one a token makes for a call without arguments too); a bare value,
// bytes and an array carry none.
func TestClientSendsTraceparentAsNewLife(t *testing.T) {
	got := make(chan string, 8)
	addr := fakeServer(t, func(f frame) []byte {
		action, data := splitBody(f.payload)
		got <- action + " " + data
		return srmp(b0Reply, f.seq, body(t, action, "1"))
	})
	tc := rpc.TraceContext{TraceID: nlTrace, SpanID: nlSpan, Flags: 1}
	tp := `"traceparent":"00-` + nlTrace + `-` + nlSpan + `-01"`
	ctx := rpc.WithTraceContext(context.Background(), tc)
	for _, c := range []struct {
		token string
		args  any
		want  string
	}{
		{"t1", addArgs{A: 1, B: 2}, `Bench/Add {"a":1,"b":2,"Token":"t1",` + tp + `}`},
		{"", addArgs{A: 1, B: 2}, `Bench/Add {"a":1,"b":2,` + tp + `}`},
		{"", map[string]any{"traceparent": "mine"}, `Bench/Add {"traceparent":"mine"}`}, // the caller's key stays
		{"t1", nil, `Bench/Add {"Token":"t1",` + tp + `}`},
		{"", nil, `Bench/Add `},
		{"", "x", `Bench/Add x`},
		{"", []int{1}, `Bench/Add [1]`},
	} {
		cl := dialClient(t, addr, rpc.ClientConfig{Token: c.token})
		var r int
		must(t, cl.Invoke(ctx, "Bench/Add", c.args, &r))
		if g := recv(t, got, "the request"); g != c.want {
			t.Errorf("token %q, args %#v:\n got %s\nwant %s", c.token, c.args, g, c.want)
		}
	}
}

// splitBody is an RPC body's action and data (as text).
func splitBody(p []byte) (string, string) {
	n := int(p[0])
	action, rest := string(p[1:1+n]), p[1+n:]
	if len(rest) < 4 {
		return action, ""
	}
	return action, string(rest[4 : 4+binary.LittleEndian.Uint32(rest)])
}

// A handler's context carries its caller's trace context, so the calls it
// makes continue the trace: client → server A → server B, as NewLife's
// spans cross NewLife → lifenet → NewLife.
func TestTraceCrossesTwoServers(t *testing.T) {
	addrB, seenB := traceServer(t, rpc.Config{})
	var clB *rpc.Client // dialed after both servers start: the leak checks run as they close
	_, addrA := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Relay/Say", func(ctx context.Context, a struct{ Input string }) (string, error) {
			return rpc.Call[string](ctx, clB, "Echo/Say", map[string]string{"input": a.Input})
		}))
	})
	clB = dialClient(t, addrB, rpc.ClientConfig{})
	clA := dialClient(t, addrA, rpc.ClientConfig{})
	tc := rpc.TraceContext{TraceID: nlTrace, SpanID: nlSpan, Flags: 1}
	r, err := rpc.Call[string](rpc.WithTraceContext(context.Background(), tc), clA, "Relay/Say", map[string]string{"input": "hi"})
	if err != nil || r != "hi" {
		t.Fatalf("relay: %q, %v", r, err)
	}
	if got := recv(t, seenB, "server B's trace"); got != tc {
		t.Errorf("server B got %+v, want %+v", got, tc)
	}
}

// Over HTTP the server also reads a traceparent header (NewLife's
// ApiHttpClient sends one), and a lifenet http:// client sends its
// context's trace context that way.
func TestHTTPCarriesTraceparent(t *testing.T) {
	addr, seen := traceServer(t, rpc.Config{})
	want := rpc.TraceContext{TraceID: nlTrace, SpanID: nlSpan, Flags: 1}
	conn, err := net.Dial("tcp", addr)
	must(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testTimeout))
	fmt.Fprintf(conn, "GET /Echo/Say?input=x HTTP/1.1\r\nHost: x\r\ntraceparent: %s\r\n\r\n", want)
	resp, err := readResponse(bufio.NewReader(conn))
	must(t, err)
	if !strings.Contains(resp, `"data":"x"`) {
		t.Fatalf("answer %s", resp)
	}
	if got := recv(t, seen, "the handler's trace"); got != want {
		t.Errorf("header: %+v, want %+v", got, want)
	}

	cl := dialClient(t, "http://"+addr, rpc.ClientConfig{})
	r, err := rpc.Call[string](rpc.WithTraceContext(context.Background(), want), cl, "Echo/Say", map[string]string{"input": "y"})
	if err != nil || r != "y" {
		t.Fatalf("http call: %q, %v", r, err)
	}
	if got := recv(t, seen, "the handler's trace"); got != want {
		t.Errorf("http client: %+v, want %+v", got, want)
	}
}

// FuzzParseTraceContext: whatever a caller sends, a trace context parsed
// has IDs of visible ASCII (1 to 128 characters; the span's may be empty)
// and survives String and a second parse unchanged.
func FuzzParseTraceContext(f *testing.F) {
	for _, s := range []string{"00-" + nlTrace + "-" + nlSpan + "-01", nlTrace, "00-a-b-zz", "00-ab\ncd-ef-01", " - - - ", "00--x-01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tc, ok := rpc.ParseTraceContext(s)
		if !ok {
			return
		}
		for _, id := range []string{tc.TraceID, tc.SpanID} {
			if len(id) > 128 || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) {
				t.Fatalf("%q: ID %q", s, id)
			}
		}
		if tc.TraceID == "" {
			t.Fatalf("%q: no trace ID, ok", s)
		}
		if again, ok := rpc.ParseTraceContext(tc.String()); !ok || again != tc {
			t.Fatalf("%q: %+v, then from %q %+v, %v", s, tc, tc.String(), again, ok)
		}
	})
}
