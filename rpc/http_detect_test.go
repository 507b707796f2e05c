package rpc_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/rpc"
)

// A request line longer than 8 KiB (a long query string), well inside
// MaxHTTPHeader, arriving in several reads, is HTTP and answered. It used
// to be taken for SRMP once 8 KiB had come without a line end: the client
// got no answer at all.
func TestLongRequestLineIsHTTP(t *testing.T) {
	srv, _ := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	l := memnet.Listen("rpc")
	must(t, srv.Serve(l))
	rc := dialMem(t, l) // in memory: each write is one read on the server
	s := strings.Repeat("x", 9000)
	req := []byte("GET /Bench/EchoString?s=" + s + " HTTP/1.1\r\nHost: x\r\n\r\n")
	rc.write(req[:8300])
	rc.write(req[8300:])
	resp, b := rc.readHTTP()
	if want := `{"action":"Bench/EchoString","code":0,"data":"` + s + `"}`; resp.StatusCode != http.StatusOK || b != want {
		t.Fatalf("%d %.80q…; want 200 and the echo", resp.StatusCode, b)
	}
}

// A request line longer than MaxHTTPHeader and net/http's 4 KiB more
// gets 431, then the connection closes.
func TestRequestLinePastMaxHTTPHeaderGets431(t *testing.T) {
	srv, _ := startServer(t, rpc.Config{MaxHTTPHeader: 4096}, func(srv *rpc.Server) { stdActions(t, srv) })
	l := memnet.Listen("rpc")
	must(t, srv.Serve(l))
	rc := dialMem(t, l)
	rc.write([]byte("GET /Bench/EchoString?s=" + strings.Repeat("x", 3000)))
	rc.write([]byte(strings.Repeat("x", 6000))) // no line end yet, past the limit
	if resp, _ := rc.readHTTP(); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
	rc.expectEOF()
}
