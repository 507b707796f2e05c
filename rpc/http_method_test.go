package rpc_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// HEAD is answered with the head GET would get (Content-Length included)
// and no body, as net/http answers it: the body used to follow, and on a
// keep-alive connection the client read it as the next response.
func TestHEADHasNoBody(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.HandleStream(srv, "Bench/Count", countTo))
	})
	rc := dialRaw(t, addr)
	rc.write([]byte("HEAD /Bench/NoArg HTTP/1.1\r\nHost: x\r\n\r\n"))
	head, err := http.ReadResponse(rc.r, &http.Request{Method: http.MethodHead})
	must(t, err)
	head.Body.Close()
	const get = `{"action":"Bench/NoArg","code":0,"data":42}`
	if head.StatusCode != http.StatusOK || head.ContentLength != int64(len(get)) {
		t.Errorf("HEAD: %d, Content-Length %d; want 200, %d (the GET's)", head.StatusCode, head.ContentLength, len(get))
	}
	if resp, b := rc.httpDo("GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != http.StatusOK || b != get {
		t.Fatalf("the GET after a HEAD on the same connection: %d %q", resp.StatusCode, b)
	}

	// HEAD of a streaming action: the event stream's head, no events, the end.
	sc := dialRaw(t, addr)
	sc.write([]byte("HEAD /Bench/Count?n=2 HTTP/1.1\r\nHost: x\r\n\r\n"))
	resp, err := http.ReadResponse(sc.r, &http.Request{Method: http.MethodHead})
	must(t, err)
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD of a stream: %v", resp.Header)
	}
	if rest, err := io.ReadAll(sc.r); err != nil || len(rest) > 0 {
		t.Fatalf("after the head of a stream: %q, %v; want the connection's end", rest, err)
	}
}

// A request that ends its connection (Connection: close, or HTTP/1.0
// without keep-alive) is answered with Connection: close, then the
// connection closes; it used to be answered with Connection: keep-alive.
func TestConnectionCloseIsAnsweredWithClose(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	for _, req := range []string{
		"GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /Bench/NoArg HTTP/1.0\r\n\r\n",
	} {
		rc := dialRaw(t, addr)
		resp, b := rc.httpDo(req)
		if !resp.Close || b != `{"action":"Bench/NoArg","code":0,"data":42}` {
			t.Errorf("%q: Close %v (Connection %q), body %q; want Connection: close", req, resp.Close, resp.Header.Get("Connection"), b)
		}
		rc.expectEOF()
	}
	rc := dialRaw(t, addr) // HTTP/1.0 asking for keep-alive keeps it
	if resp, _ := rc.httpDo("GET /Bench/NoArg HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"); resp.Close {
		t.Error("HTTP/1.0 with Connection: keep-alive was answered with Connection: close")
	}
}

// OPTIONS (a browser's CORS preflight, OPTIONS *) is answered 204 with
// the methods served and runs nothing: it ran the action, with no
// arguments, before the browser had been let send the call. No
// Access-Control-Allow-* header goes, so cross-origin calls stay refused.
func TestOPTIONSRunsNothing(t *testing.T) {
	var ran atomic.Int32
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Order/Create", func(context.Context, struct{}) (bool, error) { ran.Add(1); return true, nil }))
	})
	rc := dialRaw(t, addr)
	for _, req := range []string{
		"OPTIONS /Order/Create HTTP/1.1\r\nHost: x\r\nOrigin: http://example.com\r\nAccess-Control-Request-Method: POST\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		resp, b := rc.httpDo(req)
		if resp.StatusCode != http.StatusNoContent || b != "" || !strings.Contains(resp.Header.Get("Allow"), "POST") ||
			resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%.30q: %d %v %q; want 204 with Allow and no CORS grant", req, resp.StatusCode, resp.Header, b)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("OPTIONS ran the action %d times", n)
	}
	if resp, b := rc.httpDo("POST /Order/Create HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"); resp.StatusCode != http.StatusOK || ran.Load() != 1 {
		t.Fatalf("the POST after them on the same connection: %d %q, ran %d", resp.StatusCode, b, ran.Load())
	}
}
