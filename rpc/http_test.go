package rpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/rpc"
)

// httpServer serves the standard actions plus a few for the HTTP tests.
func httpServer(t *testing.T, cfg rpc.Config) (*rpc.Server, string) {
	t.Helper()
	return startServer(t, cfg, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Auth/Who", func(ctx context.Context, _ struct{}) (string, error) { return rpc.SessionFrom(ctx).Token(), nil }))
		must(t, rpc.Handle(srv, "User/Login", func(context.Context, struct{}) (string, error) { return "", rpc.NewError(401, "Unauthorized") }))
		must(t, rpc.Handle(srv, "T/Bool", func(context.Context, struct{}) (bool, error) { return true, nil }))
		must(t, rpc.Handle(srv, "T/Code", func(_ context.Context, a struct{ Code int }) (string, error) {
			return "", rpc.NewError(a.Code, "coded")
		}))
		must(t, rpc.Handle(srv, "T/Obj", func(context.Context, struct{}) (map[string]int, error) { return map[string]int{"x": 1}, nil }))
	})
}

// httpDo writes raw and reads one response with net/http; the body is read
// whole.
func (rc *rawConn) httpDo(raw string) (*http.Response, string) {
	rc.t.Helper()
	rc.write([]byte(raw))
	return rc.readHTTP()
}

func (rc *rawConn) readHTTP() (*http.Response, string) {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.r, nil)
	if err != nil {
		rc.t.Fatalf("reading an HTTP response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		rc.t.Fatalf("reading an HTTP body: %v", err)
	}
	return resp, string(b)
}

const r8Body = `{"action":"Bench/Add","code":0,"data":3}`

func TestBatteryHTTPEnvelope(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	cases := []struct {
		name, req, body string
	}{
		{"GET query", "GET /Bench/Add?a=1&b=2 HTTP/1.1\r\nHost: x\r\n\r\n", r8Body},
		{"POST JSON (R8)", "POST /Bench/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"a\":1,\"b\":2}", r8Body},
		{"POST JSON charset", "POST /Bench/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 13\r\n\r\n{\"a\":1,\"b\":2}", r8Body},
		{"POST form", "POST /Bench/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\na=1&b=2", r8Body},
		{"case-insensitive action", "GET /bench/add?A=1&B=2 HTTP/1.1\r\nHost: x\r\n\r\n", `{"action":"bench/add","code":0,"data":3}`},
		{"string result", "GET /Bench/EchoString?input=hi%20there HTTP/1.1\r\nHost: x\r\n\r\n", `{"action":"Bench/EchoString","code":0,"data":"hi there"}`},
		{"bool result", "GET /T/Bool HTTP/1.1\r\nHost: x\r\n\r\n", `{"action":"T/Bool","code":0,"data":true}`},
		{"object result", "GET /T/Obj HTTP/1.1\r\nHost: x\r\n\r\n", `{"action":"T/Obj","code":0,"data":{"x":1}}`},
		{"unknown action", "GET /Bench/Nope HTTP/1.1\r\nHost: x\r\n\r\n", `{"action":"Bench/Nope","code":404,"data":"无法找到名为[Bench/Nope]的服务！"}`},
		{"APIError", "GET /User/Login HTTP/1.1\r\nHost: x\r\n\r\n", `{"action":"User/Login","code":401,"data":"Unauthorized"}`},
		{"bad args", "GET /Bench/Add?a=x HTTP/1.1\r\nHost: x\r\n\r\n", ""},
	}
	for _, c := range cases {
		resp, got := rc.httpDo(c.req)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: status %d, Content-Type %q", c.name, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if resp.ContentLength != int64(len(got)) || resp.Close {
			t.Errorf("%s: Content-Length %d for %d bytes, close %v", c.name, resp.ContentLength, len(got), resp.Close)
		}
		if c.body == "" {
			if !strings.HasPrefix(got, `{"action":"Bench/Add","code":400,`) {
				t.Errorf("%s: %s, want code 400", c.name, got)
			}
			continue
		}
		if got != c.body {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.body)
		}
	}
	// A null result has no body; bytes go as they are.
	resp, got := rc.httpDo("GET /Bench/Void HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 || resp.ContentLength != 0 || got != "" {
		t.Errorf("null result: status %d, Content-Length %d, body %q", resp.StatusCode, resp.ContentLength, got)
	}
	resp, got = rc.httpDo("POST /Bench/EchoPacket HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 3\r\n\r\na=b")
	if resp.StatusCode != 200 || got != "a=b" {
		t.Errorf("bytes result: %d %q; want the octet-stream body as it is", resp.StatusCode, got)
	}
}

func TestBatteryHTTPUseHTTPStatus(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{UseHTTPStatus: true})
	rc := dialRaw(t, addr)
	cases := []struct {
		req    string
		status int
		body   string
	}{
		{"GET /Bench/Add?a=1&b=2 HTTP/1.1\r\nHost: x\r\n\r\n", 200, "3"},
		{"GET /Bench/EchoString?input=x HTTP/1.1\r\nHost: x\r\n\r\n", 200, `"x"`},
		{"GET /T/Bool HTTP/1.1\r\nHost: x\r\n\r\n", 200, "true"},
		{"GET /Bench/Nope HTTP/1.1\r\nHost: x\r\n\r\n", 404, `"无法找到名为[Bench/Nope]的服务！"`},
		{"GET /User/Login HTTP/1.1\r\nHost: x\r\n\r\n", 401, `"Unauthorized"`},
		{"GET /Bench/Void HTTP/1.1\r\nHost: x\r\n\r\n", 200, ""},
		{"GET /T/Code?code=503 HTTP/1.1\r\nHost: x\r\n\r\n", 503, `"coded"`},
		// Codes no status line can carry (not three digits; or without a
		// body, or a 3xx without Location): a 500 and the envelope.
		{"GET /T/Code?code=1001 HTTP/1.1\r\nHost: x\r\n\r\n", 500, `{"action":"T/Code","code":1001,"data":"coded"}`},
		{"GET /T/Code?code=7 HTTP/1.1\r\nHost: x\r\n\r\n", 500, `{"action":"T/Code","code":7,"data":"coded"}`},
		{"GET /T/Code?code=304 HTTP/1.1\r\nHost: x\r\n\r\n", 500, `{"action":"T/Code","code":304,"data":"coded"}`},
		{"GET /T/Code?code=204 HTTP/1.1\r\nHost: x\r\n\r\n", 500, `{"action":"T/Code","code":204,"data":"coded"}`},
		{"GET /T/Code?code=100 HTTP/1.1\r\nHost: x\r\n\r\n", 500, `{"action":"T/Code","code":100,"data":"coded"}`},
	}
	for _, c := range cases {
		resp, got := rc.httpDo(c.req)
		if resp.StatusCode != c.status || got != c.body {
			t.Errorf("%.25q: %d %s, want %d %s", c.req, resp.StatusCode, got, c.status, c.body)
		}
	}
}

func TestBatteryHTTPFraming(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{})
	// A body split over several writes.
	rc := dialRaw(t, addr)
	for _, part := range []string{
		"POST /Bench/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
		"Content-Length: 13\r\n\r\n{\"a\"",
		":1,\"b\"",
		":2}",
	} {
		rc.write([]byte(part))
	}
	if _, got := rc.readHTTP(); got != r8Body {
		t.Errorf("split body: %s", got)
	}
	// Two requests in one write, answered in order, and a third.
	rc.write([]byte("GET /Bench/Add?a=1&b=2 HTTP/1.1\r\nHost: x\r\n\r\nPOST /Bench/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"a\":3,\"b\":4}"))
	if _, got := rc.readHTTP(); got != r8Body {
		t.Errorf("first pipelined: %s", got)
	}
	if _, got := rc.readHTTP(); got != `{"action":"Bench/Add","code":0,"data":7}` {
		t.Errorf("second pipelined: %s", got)
	}
	// Connection: close is honoured after the answer.
	resp, got := rc.httpDo("GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 200 || got != `{"action":"Bench/NoArg","code":0,"data":42}` {
		t.Errorf("last request: %d %s", resp.StatusCode, got)
	}
	rc.expectEOF()
}

func TestBatteryHTTPErrors(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{MaxHTTPHeader: 256})
	cases := []struct {
		name   string
		parts  []string
		status int
	}{
		{"malformed request line", []string{"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n"}, 400},
		{"header line without a colon", []string{"GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n"}, 400},
		{"header too large", []string{"GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n", "X-Pad: " + strings.Repeat("p", 400) + "\r\n\r\n"}, 431},
		{"body too large", []string{"POST /Bench/Add HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n"}, 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, addr)
			for _, p := range c.parts {
				rc.write([]byte(p))
			}
			resp, _ := rc.readHTTP()
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d", resp.StatusCode, c.status)
			}
			if !resp.Close { // the answer says what follows: the connection ends
				t.Errorf("Connection: %q, want close", resp.Header.Get("Connection"))
			}
			rc.expectEOF()
		})
	}
}

// A chunked body is read as net/http reads it.
func TestChunkedBodyIsRead(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	resp, got := rc.httpDo("POST /Bench/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nd\r\n{\"a\":1,\"b\":2}\r\n0\r\n\r\n")
	if resp.StatusCode != 200 || got != `{"action":"Bench/Add","code":0,"data":3}` {
		t.Errorf("%d %s", resp.StatusCode, got)
	}
}

// A header over MaxHTTPHeader is refused even when it arrives whole in one
// read, in the JSON envelope.
func TestBatteryHTTPHeaderLimitWholeHeader(t *testing.T) {

	_, addr := httpServer(t, rpc.Config{MaxHTTPHeader: 256})
	rc := dialRaw(t, addr)
	resp, _ := rc.httpDo("GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 1000) + "\r\n\r\n")
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d (%s), want 431 in the JSON envelope", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestBatteryHTTPToken(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	for _, c := range []struct{ req, token string }{
		{"GET /Auth/Who HTTP/1.1\r\nHost: x\r\n\r\n", ""},
		{"GET /Auth/Who HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer abc\r\n\r\n", "abc"},
		{"GET /Auth/Who HTTP/1.1\r\nHost: x\r\nX-Token: xyz\r\n\r\n", "xyz"},
		{"GET /Auth/Who?Token=q1 HTTP/1.1\r\nHost: x\r\n\r\n", "q1"},
		{"GET /Auth/Who HTTP/1.1\r\nHost: x\r\n\r\n", ""}, // a request's token is its own: none
		{"GET /Auth/Who HTTP/1.1\r\nHost: x\r\nX-Token: xyz\r\n\r\n", "xyz"},
		{"GET /Auth/Who HTTP/1.1\r\nHost: x\r\n\r\n", ""}, // a proxy's next user, on the same connection
		{"POST /Auth/Who HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"token\":\"j\"}", "j"},
	} {
		if _, got := rc.httpDo(c.req); got != `{"action":"Auth/Who","code":0,"data":"`+c.token+`"}` {
			t.Errorf("%.40q: %s, want token %q", c.req, got, c.token)
		}
	}
}

func TestBatteryHTTPRefusedWhenOff(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{NoHTTP: true})
	rc := dialRaw(t, addr)
	resp, _ := rc.httpDo("GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 400 {
		t.Errorf("NoHTTP: status %d, want 400", resp.StatusCode)
	}
	rc.expectEOF()
}

// With neither HTTP nor WebSocket the same bytes are an SRMP stream: "GET "
// is a one-way frame of 0x2054 bytes, which never completes here.
func TestBatteryHTTPSRMPOnly(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{NoHTTP: true, NoWebSocket: true})
	rc := dialRaw(t, addr)
	rc.write([]byte("GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n\r\n"))
	rc.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := rc.r.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("an SRMP-only port answered HTTP: %d bytes, %v", n, err)
	}
}

// A connection whose first frame starts like "GET /" (first byte 0x47: a
// one-way request, flag 7) is served as SRMP once the frame is there,
// although its first read, 100 bytes of it, looks like HTTP.
func TestBatteryDetectSRMPThatLooksLikeGET(t *testing.T) {
	name := "Odd/" + strings.Repeat("x", 43) // 47 bytes: the varint is '/'
	got := make(chan int, 1)
	srv, _ := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, name, func(_ context.Context, b []byte) (int, error) {
			got <- len(b)
			return 0, nil
		}))
	})
	data := bytes.Repeat([]byte("a"), 0x2054-1-len(name)-4)
	payload := append([]byte{byte(len(name))}, name...)
	payload = binary.LittleEndian.AppendUint32(payload, uint32(len(data)))
	payload = append(payload, data...)
	frame := srmp(0x47, 'E', payload)
	if !bytes.HasPrefix(frame, []byte("GET /Odd/")) {
		t.Fatalf("the frame starts %q", frame[:9])
	}
	l := memnet.Listen("rpc")
	must(t, srv.Serve(l))
	rc := dialMem(t, l)
	rc.write(frame[:100]) // in memory: the server reads these 100 bytes on their own
	rc.write(frame[100:])
	if n := recv(t, got, "the one-way call"); n != len(data) {
		t.Errorf("handler got %d bytes, want %d", n, len(data))
	}
	rc.write(srmp(b0Request, 1, body(t, "Bench/NoArg", nil)))
	if f := rc.readFrame(); f.b0 != b0Reply || f.seq != 1 || !bytes.Equal(f.payload, body(t, "Bench/NoArg", "42")) {
		t.Errorf("the next request: %02X seq %d %q", f.b0, f.seq, f.payload)
	}
}

// "GET " split across writes still becomes HTTP. The connections are
// in memory: each write is a read of its own on the server (memnet's
// guarantee), so the detection really sees the request in two parts.
func TestBatteryDetectSplitGET(t *testing.T) {
	srv, _ := httpServer(t, rpc.Config{})
	l := memnet.Listen("rpc")
	must(t, srv.Serve(l))
	for _, cut := range []int{1, 2, 3, 4, 5, 20} {
		rc := dialMem(t, l)
		req := "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n\r\n"
		rc.write([]byte(req[:cut]))
		rc.write([]byte(req[cut:]))
		resp, got := rc.readHTTP()
		if resp.StatusCode != 200 || got != `{"action":"Bench/NoArg","code":0,"data":42}` {
			t.Errorf("cut at %d: %d %s", cut, resp.StatusCode, got)
		}
	}
}

// The HTTP client of the package against the server's HTTP side.
func TestBatteryHTTPClient(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{})
	ctx := context.Background()
	cl := dialClient(t, "http://"+addr, rpc.ClientConfig{Token: "tk"})
	if n, err := rpc.Call[int32](ctx, cl, "Bench/Add", addArgs{40, 2}); err != nil || n != 42 {
		t.Errorf("Bench/Add: %d, %v", n, err)
	}
	if n, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil || n != 42 {
		t.Errorf("Bench/NoArg: %d, %v", n, err)
	}
	if who, err := rpc.Call[string](ctx, cl, "Auth/Who", nil); err != nil || who != "tk" {
		t.Errorf("Auth/Who: %q, %v; want the Bearer token", who, err)
	}
	if m, err := rpc.Call[map[string]int](ctx, cl, "T/Obj", nil); err != nil || m["x"] != 1 {
		t.Errorf("T/Obj: %v, %v", m, err)
	}
	if _, err := rpc.Call[string](ctx, cl, "User/Login", nil); apiCode(err) != 401 {
		t.Errorf("User/Login: %v, want 401", err)
	}
	if _, err := rpc.Call[string](ctx, cl, "Bench/Nope", nil); apiCode(err) != 404 {
		t.Errorf("Bench/Nope: %v, want 404", err)
	}
	if _, err := rpc.Call[int](ctx, cl, "Bench/Add", "text"); err == nil {
		t.Error("a text argument over HTTP was accepted")
	}
	if err := cl.InvokeOneWay(ctx, "Bench/NoArg", nil); err == nil {
		t.Error("a one-way call over HTTP was accepted")
	}
}

// With UseHTTPStatus the client reads the status and the bare body.
func TestBatteryHTTPClientUseHTTPStatus(t *testing.T) {
	_, addr := httpServer(t, rpc.Config{UseHTTPStatus: true})
	ctx := context.Background()
	cl := dialClient(t, "http://"+addr, rpc.ClientConfig{})
	if n, err := rpc.Call[int32](ctx, cl, "Bench/Add", addArgs{1, 2}); err != nil || n != 3 {
		t.Errorf("Bench/Add: %d, %v", n, err)
	}
	if s, err := rpc.Call[string](ctx, cl, "Bench/EchoString", map[string]string{"input": "q"}); err != nil || s != "q" {
		t.Errorf("Bench/EchoString: %q, %v", s, err)
	}
	var ae *rpc.APIError
	if _, err := rpc.Call[string](ctx, cl, "User/Login", nil); !errors.As(err, &ae) || ae.Code != 401 || ae.Message != "Unauthorized" {
		t.Errorf("User/Login: %v, want 401 Unauthorized", err)
	}
	if _, err := rpc.Call[string](ctx, cl, "Bench/Nope", nil); apiCode(err) != 404 {
		t.Errorf("Bench/Nope: %v, want 404", err)
	}
	for _, code := range []int{1001, 7, 304, 503} { // the first three in the envelope of a 500, 503 as the status
		if _, err := rpc.Call[string](ctx, cl, "T/Code", map[string]int{"code": code}); !errors.As(err, &ae) || ae.Code != code || ae.Message != "coded" {
			t.Errorf("T/Code %d: %v, want code %d, coded", code, err, code)
		}
	}
}
