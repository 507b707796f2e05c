package rpc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/transport"
)

func TestRouteConnByFirstBytes(t *testing.T) {
	s, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	frameGET := append([]byte("GET "), make([]byte, 0x2054)...) // a whole one-way frame, flag 7
	cases := []struct {
		in   string
		want transport.Route
	}{
		{"G", transport.RouteMore},
		{"GE", transport.RouteMore},
		{"GET", transport.RouteMore},
		{"GET /", transport.RouteMore},
		{"GET /Bench/Add HTTP/1.1", transport.RouteMore},
		{"GET /Bench/Add HTTP/1.1\r", transport.RouteMore},
		{"GET /Bench/Add HTTP/1.1\r\n", transport.RouteHandOff},
		{"POST /x HTTP/1.0\r\n", transport.RouteHandOff},
		{"OPTIONS * HTTP/1.1\r\n", transport.RouteHandOff},
		{"GET /x HTTP/2\r\n", transport.RouteServe},
		{"GET /x\r\n", transport.RouteServe},
		{"GEX", transport.RouteServe},
		{"\x01\x01\x1b\x00", transport.RouteServe},
		{"get / HTTP/1.1\r\n", transport.RouteServe},
		{string(frameGET), transport.RouteServe},
		{"GET /\x00", transport.RouteServe},
		{"GET /x\rGET", transport.RouteServe},
		{"GET /\tx HTTP/1.1\r\n", transport.RouteHandOff}, // not a valid line, but HTTP's to refuse (400)
		{"GET /" + strings.Repeat("a", 9000), transport.RouteMore},
		{"GET /" + strings.Repeat("a", defaultMaxHTTPHeader), transport.RouteHandOff}, // past the header limit: 431
		{"GET /" + strings.Repeat("a", defaultMaxHTTPHeader) + " HTTP/1.0\r\n", transport.RouteHandOff},
	}
	for _, c := range cases {
		if got := s.routeConn([]byte(c.in), false); got != c.want {
			t.Errorf("route %.30q: %d, want %d", c.in, got, c.want)
		}
	}
}

// FuzzRouteConn: routeConn never panics, returns a route it may return,
// and keeps the decision a prefix of the bytes already made (the
// transport asks again with more bytes, however they were split).
func FuzzRouteConn(f *testing.F) {
	for _, s := range []string{
		"", "G", "GET ", "GET / HTTP/1.1\r\n\r\n", "POST /Bench/Add HTTP/1.1\r\nContent-Length: 1\r\n\r\n1",
		"\x01\x01\x1b\x00\x09Bench/Add", "GET \x2f", "DELETE /x HTTP/1.0\r\n", "PUT", "PATCH /", "HEAD / HTTP/1.1\n",
		"OPTIONS * HTTP/1.1\r\n", "GET /a b HTTP/1.1\r\n",
	} {
		f.Add([]byte(s), uint16(3))
	}
	s, err := NewServer(Config{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		got := s.routeConn(b, false)
		switch got {
		case transport.RouteMore, transport.RouteServe, transport.RouteHandOff:
		default:
			t.Fatalf("detect %q: mode %d", b, got)
		}
		if got == transport.RouteMore && len(b) > defaultMaxHTTPHeader {
			t.Fatalf("still detecting after %d bytes", len(b))
		}
		if got == transport.RouteHandOff && !bytes.Contains(b, []byte("\r\n")) && len(b) <= defaultMaxHTTPHeader {
			t.Fatalf("HTTP without a whole request line: %q", b)
		}
		if int(cut) <= len(b) {
			if early := s.routeConn(b[:cut], false); early != transport.RouteMore && early != got {
				t.Fatalf("%q decided %d on its first %d bytes but %d on all of them", b, early, cut, got)
			}
		}
	})
}
