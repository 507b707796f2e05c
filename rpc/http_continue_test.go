package rpc_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// A request that expects 100-continue gets it once its head is accepted,
// before its body comes (curl waits a second for it past 1 KiB), and then
// its answer; one that does not ask, or asks over HTTP/1.0, gets no 100.
func TestExpectContinueIsAnswered(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	body := `{"input":"hello"}`
	head := "POST /Bench/EchoString HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n"
	rc := dialRaw(t, addr)
	rc.write(fmt.Appendf(nil, head, len(body)))
	resp, err := http.ReadResponse(rc.r, nil)
	must(t, err)
	if resp.StatusCode != http.StatusContinue {
		t.Fatalf("before the body: %d, want 100 Continue", resp.StatusCode)
	}
	rc.write([]byte(body[:5]))
	rc.write([]byte(body[5:])) // a body in two reads: no second 100
	if resp, b := rc.readHTTP(); resp.StatusCode != http.StatusOK || b != `{"action":"Bench/EchoString","code":0,"data":"hello"}` {
		t.Fatalf("the answer: %d %q", resp.StatusCode, b)
	}
	// The next request on the connection, with its body at once and no
	// Expect, is answered without a 100.
	plain := fmt.Sprintf("POST /Bench/EchoString HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if resp, _ := rc.httpDo(plain); resp.StatusCode != http.StatusOK {
		t.Fatalf("a request without Expect: %d, want 200 at once", resp.StatusCode)
	}

	old := dialRaw(t, addr)
	old.write(fmt.Appendf(nil, "POST /Bench/EchoString HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(body)))
	old.write([]byte(body))
	if resp, _ := old.readHTTP(); resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP/1.0 with Expect: %d, want 200 and no 100", resp.StatusCode)
	}
}
