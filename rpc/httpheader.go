package rpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// readRequestHead parses an HTTP request's head (its bytes up to and with
// the blank line) as net/http's server does: http.ReadRequest, then the
// checks its server makes before it serves (net/http server.go
// readRequest, with golang.org/x/net/http/httpguts's rules, restated
// here): an HTTP/1.1 request needs one Host header, a host of valid bytes,
// every header name a token (RFC 9110 §5.1: "Transfer-Encoding : chunked"
// has a space in its name, and a proxy that reads it as chunked would
// frame the body otherwise: request smuggling) and every value free of
// control bytes but HTAB (RFC 9110 §5.5). Its error is the 400's text.
func readRequestHead(head []byte) (*http.Request, error) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		return nil, errors.New(clip(err.Error())) // its text may quote a whole line
	}
	host, haveHost := hostHeader(head) // http.ReadRequest took it out of req.Header (one at most)
	if req.URL.Host == "" {
		host = req.Host // the header's value, folded lines joined
	}
	switch {
	case req.ProtoAtLeast(1, 1) && !haveHost && req.Method != http.MethodConnect:
		return nil, errMissingHost
	case haveHost && !validHostHeader(host):
		return nil, fmt.Errorf("malformed Host header %s", strconv.Quote(clip(host)))
	}
	for k, vv := range req.Header {
		if !validHeaderName(k) {
			return nil, fmt.Errorf("invalid header name %s", strconv.Quote(clip(k)))
		}
		for _, v := range vv {
			if !validHeaderValue(v) {
				return nil, fmt.Errorf("invalid value of header %s", strconv.Quote(clip(k)))
			}
		}
	}
	return req, nil
}

var errMissingHost = errors.New("missing required Host header")

// hostHeader finds the value of the Host header in a request's head
// (the first, without surrounding blanks); ok reports one was there, even
// empty (an HTTP/1.1 request may send "Host:" with no value).
func hostHeader(head []byte) (host string, ok bool) {
	for _, line := range bytes.Split(head, []byte("\n"))[1:] {
		name, value, found := bytes.Cut(line, []byte(":"))
		if found && len(name) == 4 && foldEq(name, "Host") {
			return string(bytes.Trim(value, " \t\r")), true
		}
	}
	return "", false
}

// tokenByte and hostByte are the bytes of a header name (RFC 9110 §5.6.2
// tchar) and of a Host header (httpguts.ValidHostHeader's lenient set).
var tokenByte, hostByte = func() (t, h [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c], h[c] = true, true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], h[c] = true, true
		t[c-'a'+'A'], h[c-'a'+'A'] = true, true
	}
	for _, c := range []byte("!#$%&'*+-.^_`|~") {
		t[c] = true
	}
	for _, c := range []byte("!$%&'()*+,-.:;=[]_~") {
		h[c] = true
	}
	return t, h
}()

// validHeaderName reports whether k is a token (httpguts.ValidHeaderFieldName).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !tokenByte[k[i]] {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v has no control byte but HTAB
// (httpguts.ValidHeaderFieldValue; obs-fold, already joined with a
// space by net/textproto, passes).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// validHostHeader reports whether h has only bytes a host and port may
// (httpguts.ValidHostHeader).
func validHostHeader(h string) bool {
	for i := 0; i < len(h); i++ {
		if !hostByte[h[i]] {
			return false
		}
	}
	return true
}
