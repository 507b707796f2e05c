package rpc_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// headerCases are request heads net/http's server refuses (400) or serves,
// each with what lifenet must answer: the same.
var headerCases = []struct {
	name, req string
	ok        bool
}{
	{"valid", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX-A: a\tb\r\n\r\n", true},
	// RFC 9112 §5.1: no whitespace between a field name and the colon. A
	// proxy that reads it as Transfer-Encoding frames the body otherwise.
	{"space before the colon", "POST /Bench/EchoString HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\nabc", false},
	{"tab before the colon", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX-A\t: v\r\n\r\n", false},
	{"separator in a name", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX(A): v\r\n\r\n", false},
	{"DEL in a name", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX\x7fA: v\r\n\r\n", false},
	{"non-ASCII name", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX-é: v\r\n\r\n", false},
	{"empty name", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", false},
	{"NUL in a value", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", false},
	{"control byte in a value", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", false},
	{"DEL in a value", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX-A: a\x7fb\r\n\r\n", false},
	{"CR in a value", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", false},
	{"HTTP/1.1 without Host", "GET /Bench/NoArg HTTP/1.1\r\nX-A: v\r\n\r\n", false},
	{"HTTP/1.1, empty Host", "GET /Bench/NoArg HTTP/1.1\r\nHost:\r\n\r\n", true},
	{"HTTP/1.0 without Host", "GET /Bench/NoArg HTTP/1.0\r\n\r\n", true},
	{"two Hosts", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", false},
	{"malformed Host", "GET /Bench/NoArg HTTP/1.1\r\nHost: a b\r\n\r\n", false},
	{"host folded onto the next line", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n y\r\n\r\n", false},
	{"value folded onto the next line", "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", true},
}

// Each case's status from net/http's own server: the reference.
func stdStatus(t *testing.T, srv *httptest.Server, req string) int {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	must(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	_, err = io.WriteString(c, req)
	must(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	must(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// Header names and values are read by net/http's server's rules (RFC 9110
// §5.1, §5.5; RFC 9112 §3.2, §5.1): what it refuses gets a 400 and the
// connection's end, what it serves is served.
func TestHTTPHeadersFollowNetHTTP(t *testing.T) {
	std := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer std.Close()
	_, addr := httpServer(t, rpc.Config{})
	for _, tc := range headerCases {
		want := stdStatus(t, std, tc.req)
		if (want == 200) != tc.ok {
			t.Fatalf("%s: net/http answers %d, the table says ok=%v", tc.name, want, tc.ok)
		}
		rc := dialRaw(t, addr)
		resp, body := rc.httpDo(tc.req)
		if resp.StatusCode != want {
			t.Errorf("%s: %d %q, net/http's server answers %d", tc.name, resp.StatusCode, body, want)
			continue
		}
		if !tc.ok {
			if !resp.Close {
				t.Errorf("%s: the 400 does not say Connection: close", tc.name)
			}
			rc.expectEOF() // nothing after it is read: no body framed by the other header
		}
	}
}
