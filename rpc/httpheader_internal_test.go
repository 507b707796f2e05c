package rpc

import (
	"strings"
	"testing"
)

// readRequestHead never panics, and a head it accepts has only valid
// header names and values, and a Host when it is HTTP/1.1.
func FuzzReadRequestHead(f *testing.F) {
	for _, s := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\n y\r\n\r\n", "GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nhost:\r\nX-A: a\tb\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nX-A: \x01\r\n\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		req, err := readRequestHead(head)
		if err != nil {
			if len(err.Error()) > 400 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
			return
		}
		if req.ProtoAtLeast(1, 1) && req.Method != "CONNECT" {
			if _, ok := hostHeader(head); !ok {
				t.Fatalf("%q: HTTP/1.1 accepted without Host", head)
			}
		}
		if !validHostHeader(req.Host) && req.URL.Host == "" {
			t.Fatalf("%q: Host %q accepted", head, req.Host)
		}
		for k, vv := range req.Header {
			if !validHeaderName(k) || strings.ContainsAny(k, " \t:") {
				t.Fatalf("%q: header name %q accepted", head, k)
			}
			for _, v := range vv {
				if !validHeaderValue(v) {
					t.Fatalf("%q: value %q of %s accepted", head, v, k)
				}
			}
		}
	})
}
