package rpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

type nameCtl struct{}

func (nameCtl) Echo(s string) string { return s }
func (nameCtl) Twice(n int32) int32  { return 2 * n }

// reqBody is a request's body as NewLife's ApiClient writes it: the
// action's name, then the arguments as JSON in the data block.
func reqBody(action, data string) []byte { return okBody(action, data) }

// nameServer serves the built-ins, a Handle action with a named string
// parameter, one whose parameter is Token, and a registered controller
// whose parameters are named.
func nameServer(t *testing.T) string {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Test/GetToken", func(_ context.Context, tok string) (string, error) { return tok, nil }, rpc.WithParams("Token")))
		must(t, rpc.Handle(srv, "Test/Who", func(ctx context.Context, _ struct{}) (string, error) { return rpc.SessionFrom(ctx).Token(), nil }))
		must(t, rpc.Handle(srv, "Test/Unnamed", func(_ context.Context, s string) (string, error) { return s, nil }))
		must(t, srv.Register(nameCtl{}, rpc.WithPrefix("Name"), rpc.WithParam("Echo", "input"), rpc.WithParam("Twice", "n")))
	})
	return addr
}

// call sends one NewLife request over SRMP and returns the reply's first
// byte and data.
func callSRMP(t *testing.T, rc *rawConn, seq byte, action, data string) (byte, string) {
	t.Helper()
	rc.write(srmp(b0Request, seq, reqBody(action, data)))
	f := rc.readFrame()
	if f.seq != seq {
		t.Fatalf("%s: reply seq %d, want %d", action, f.seq, seq)
	}
	n := int(f.payload[0])
	if f.b0 == b0Error {
		return f.b0, string(f.payload[1+n+8:])
	}
	if len(f.payload) == 1+n {
		return f.b0, ""
	}
	return f.b0, string(f.payload[1+n+4:])
}

// NewLife's GetParameterValues binds Info(String state) by name and
// ignores other keys; ApiClient with a Token calling Api/Info with new { }
// sends {"Token":"…"}.
func TestBindByNameSRMP(t *testing.T) {
	addr := nameServer(t)
	rc := dialRaw(t, addr)
	for i, tc := range []struct{ action, data, want string }{
		{"Api/Info", `{"state":"S","state2":"T"}`, `"State":"S"`},
		{"Api/Info", `{"STATE":"S"}`, `"State":"S"`},
		{"Api/Info", `{"Token":"tok1"}`, `"Token":"tok1"`},
		{"Api/Info", `{"other":1}`, `"Name"`},
		{"Name/Echo", `{"x":1,"Input":"hi","Token":"t"}`, `hi`},
		{"Name/Echo", `{"x":1}`, ``},
		{"Name/Twice", `{"n":"21","m":5}`, `42`},
		{"Name/Echo", `raw`, `raw`},
		{"Test/Unnamed", `{"s":"one","traceparent":"00-a-b-01"}`, `one`},
	} {
		b0, got := callSRMP(t, rc, byte(i+1), tc.action, tc.data)
		if b0 != b0Reply || !strings.Contains(got, tc.want) || tc.want == "" && got != "" {
			t.Errorf("%s %s: %02x %s, want 81 with %s", tc.action, tc.data, b0, got, tc.want)
		}
	}
	// Actions without names keep the single-entry form.
	if b0, got := callSRMP(t, rc, 20, "Test/Unnamed", `{"a":"1","b":"2"}`); b0 != b0Error || !strings.Contains(got, "2 entries") {
		t.Errorf("unnamed with 2 entries: %02x %s, want a 400", b0, got)
	}
}

// NewLife's Prepare takes the token from a Token argument and leaves it
// in the dictionary: GetToken(String Token) with {"Token":"x"} binds x,
// and the session holds x.
func TestBindTokenParameter(t *testing.T) {
	addr := nameServer(t)
	rc := dialRaw(t, addr)
	if b0, got := callSRMP(t, rc, 1, "Test/GetToken", `{"Token":"x"}`); b0 != b0Reply || got != "x" {
		t.Fatalf("GetToken: %02x %q, want 81 x", b0, got)
	}
	if b0, got := callSRMP(t, rc, 2, "Test/Who", ``); b0 != b0Reply || got != "x" {
		t.Fatalf("session token: %02x %q, want x", b0, got)
	}
	hc := dialRaw(t, addr)
	body := `{"Token":"y"}`
	_, got := hc.httpDo(fmt.Sprintf("POST /Test/GetToken HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	if want := `{"action":"Test/GetToken","code":0,"data":"y"}`; got != want {
		t.Fatalf("HTTP GetToken: %s, want %s", got, want)
	}
}

func TestBindByNameHTTP(t *testing.T) {
	addr := nameServer(t)
	hc := dialRaw(t, addr)
	body := `{"state":"S","state2":"T"}`
	_, got := hc.httpDo(fmt.Sprintf("POST /Api/Info HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	var env struct {
		Code int
		Data map[string]any
	}
	if err := json.Unmarshal([]byte(got), &env); err != nil || env.Code != 0 || env.Data["State"] != "S" {
		t.Fatalf("HTTP Api/Info: %s", got)
	}
	_, got = hc.httpDo("GET /Name/Echo?x=1&input=q HTTP/1.1\r\nHost: x\r\n\r\n")
	if want := `{"action":"Name/Echo","code":0,"data":"q"}`; got != want {
		t.Fatalf("HTTP query: %s, want %s", got, want)
	}
}
