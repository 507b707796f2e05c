package wstest_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
)

// rfcRequest is the opening handshake of RFC 6455 §1.2.
const rfcRequest = "GET /chat HTTP/1.1\r\n" +
	"Host: server.example.com\r\n" +
	"Upgrade: websocket\r\n" +
	"Connection: Upgrade\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
	"Origin: http://example.com\r\n" +
	"Sec-WebSocket-Protocol: chat, superchat\r\n" +
	"Sec-WebSocket-Version: 13\r\n\r\n"

func readRequest(t *testing.T, raw string) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("ReadRequest: %v\n%s", err, raw)
	}
	return r
}

func readResponse(t *testing.T, raw []byte, req *http.Request) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), req)
	if err != nil {
		t.Fatalf("ReadResponse: %v\n%s", err, raw)
	}
	return resp
}

func TestAcceptKeyRFC(t *testing.T) {
	if got := ws.AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("AcceptKey = %q", got)
	}
}

func TestIsUpgrade(t *testing.T) {
	const key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	req := func(method, headers string) string {
		return method + " /ws HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n"
	}
	tests := []struct {
		name string
		raw  string
		want bool
	}{
		{"RFC example", rfcRequest, true},
		{"no version", req("GET", "Upgrade: websocket\r\nConnection: Upgrade\r\n"+key), true},
		{"mixed case", req("GET", "upgrade: WebSocket\r\nconnection: UPGRADE\r\n"+key+"Sec-WebSocket-Version: 13\r\n"), true},
		{"token list", req("GET", "Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"+key), true},
		{"token list no spaces", req("GET", "Upgrade: websocket\r\nConnection: keep-alive,upgrade\r\n"+key), true},
		{"two Connection lines", req("GET", "Upgrade: websocket\r\nConnection: keep-alive\r\nConnection: Upgrade\r\n"+key), true},
		{"POST", req("POST", "Upgrade: websocket\r\nConnection: Upgrade\r\n"+key+"Content-Length: 0\r\n"), false},
		{"plain GET", req("GET", ""), false},
		{"no Upgrade", req("GET", "Connection: Upgrade\r\n"+key), false},
		{"Upgrade h2c", req("GET", "Upgrade: h2c\r\nConnection: Upgrade\r\n"+key), false},
		{"no Connection", req("GET", "Upgrade: websocket\r\n"+key), false},
		{"Connection keep-alive", req("GET", "Upgrade: websocket\r\nConnection: keep-alive\r\n"+key), false},
		{"Connection upgraded", req("GET", "Upgrade: websocket\r\nConnection: upgraded\r\n"+key), false},
		{"no key", req("GET", "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"), false},
		{"version 8", req("GET", "Upgrade: websocket\r\nConnection: Upgrade\r\n"+key+"Sec-WebSocket-Version: 8\r\n"), false},
		{"empty version", req("GET", "Upgrade: websocket\r\nConnection: Upgrade\r\n"+key+"Sec-WebSocket-Version: \r\n"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := readRequest(t, tt.raw)
			if got := ws.IsUpgrade(r); got != tt.want {
				t.Fatalf("IsUpgrade = %v, want %v", got, tt.want)
			}
			// Only an upgrade but for its version asks for another one.
			other := strings.Contains(tt.name, "version") && tt.name != "no version"
			if got := ws.WantsOtherVersion(r); got != other {
				t.Fatalf("WantsOtherVersion = %v, want %v", got, other)
			}
		})
	}
	if ws.IsUpgrade(nil) || ws.WantsOtherVersion(nil) {
		t.Fatal("IsUpgrade(nil) or WantsOtherVersion(nil) = true")
	}
}

func TestAppendAccept(t *testing.T) {
	r := readRequest(t, rfcRequest)
	got := ws.AppendAccept([]byte("x"), r, "chat")
	want := "xHTTP/1.1 101 Switching Protocols\r\n" +
		"Upgrade: websocket\r\n" +
		"Connection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" +
		"Sec-WebSocket-Protocol: chat\r\n\r\n"
	if string(got) != want {
		t.Fatalf("AppendAccept =\n%q\nwant\n%q", got, want)
	}
	resp := readResponse(t, got[1:], r)
	if err := ws.CheckResponse(resp, "dGhlIHNhbXBsZSBub25jZQ=="); err != nil {
		t.Fatalf("CheckResponse: %v", err)
	}
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "chat" {
		t.Fatalf("protocol %q", p)
	}

	// No protocol: no Sec-WebSocket-Protocol line.
	got = ws.AppendAccept(nil, r, "")
	if bytes.Contains(got, []byte("Sec-WebSocket-Protocol")) {
		t.Fatalf("protocol line without protocol:\n%s", got)
	}
	if err := ws.CheckResponse(readResponse(t, got, r), "dGhlIHNhbXBsZSBub25jZQ=="); err != nil {
		t.Fatalf("CheckResponse: %v", err)
	}

	// A protocol cannot inject headers.
	got = ws.AppendAccept(nil, r, "chat\r\nX-Evil: 1")
	resp = readResponse(t, got, r)
	if resp.Header.Get("X-Evil") != "" || resp.Header.Get("Sec-WebSocket-Protocol") != "chatX-Evil: 1" {
		t.Fatalf("header injection:\n%s", got)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	key, err := ws.NewKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 16 {
		t.Fatalf("NewKey = %q: %d bytes, %v", key, len(raw), err)
	}
	for _, proto := range []string{"", "srmp"} {
		b := ws.AppendRequest(nil, "example.com:8080", "/api?x=1", key, proto)
		r := readRequest(t, string(b))
		if !ws.IsUpgrade(r) {
			t.Fatalf("IsUpgrade(AppendRequest) = false:\n%s", b)
		}
		if r.Host != "example.com:8080" || r.URL.Path != "/api" || r.URL.RawQuery != "x=1" ||
			r.Header.Get("Sec-WebSocket-Key") != key || r.Header.Get("Sec-WebSocket-Protocol") != proto ||
			r.Header.Get("Sec-WebSocket-Version") != "13" {
			t.Fatalf("request fields wrong:\n%s", b)
		}
		resp := readResponse(t, ws.AppendAccept(nil, r, proto), r)
		if err := ws.CheckResponse(resp, key); err != nil {
			t.Fatalf("CheckResponse: %v", err)
		}
	}
	want := "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if got := ws.AppendRequest(nil, "h", "", "k", ""); string(got) != want {
		t.Fatalf("AppendRequest =\n%q\nwant\n%q", got, want)
	}
	// Values cannot break the request apart.
	b := ws.AppendRequest(nil, "h\r\nX-Evil: 1", "/a b\r\n", "k", "p\n")
	r := readRequest(t, string(b))
	if r.URL.Path != "/ab" || r.Header.Get("X-Evil") != "" || r.Header.Get("Sec-WebSocket-Protocol") != "p" {
		t.Fatalf("injection:\n%q", b)
	}
}

func TestNewKey(t *testing.T) {
	key, err := ws.NewKey(bytes.NewReader(seq(16)))
	if err != nil || key != "AAECAwQFBgcICQoLDA0ODw==" {
		t.Fatalf("NewKey = %q, %v", key, err)
	}
	_, err = ws.NewKey(bytes.NewReader(seq(15)))
	if !errors.Is(err, ws.ErrHandshake) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short read: %v", err)
	}
}

func TestCheckResponseFailures(t *testing.T) {
	const key = "dGhlIHNhbXBsZSBub25jZQ=="
	const accept = "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
	const up = "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	tests := []struct {
		name, raw, msg string
	}{
		{"status 200", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" + up + accept + "\r\n", "status"},
		{"status 400", "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "400"},
		{"no Upgrade", "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n" + accept + "\r\n", "Upgrade header"},
		{"Upgrade h2c", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n" + accept + "\r\n", "Upgrade header"},
		{"no Connection", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n" + accept + "\r\n", "Connection header"},
		{"no accept", "HTTP/1.1 101 Switching Protocols\r\n" + up + "\r\n", "Sec-WebSocket-Accept"},
		{"wrong accept", "HTTP/1.1 101 Switching Protocols\r\n" + up + "Sec-WebSocket-Accept: AAAA\r\n\r\n", "Sec-WebSocket-Accept"},
		{"extension", "HTTP/1.1 101 Switching Protocols\r\n" + up + accept + "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n", "Extensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ws.CheckResponse(readResponse(t, []byte(tt.raw), nil), key)
			if !errors.Is(err, ws.ErrHandshake) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("CheckResponse = %v; want ErrHandshake mentioning %q", err, tt.msg)
			}
		})
	}
	// The same response passes with the right headers and fails for
	// another key.
	ok := []byte("HTTP/1.1 101 Switching Protocols\r\n" + up + accept + "\r\n")
	if err := ws.CheckResponse(readResponse(t, ok, nil), key); err != nil {
		t.Fatalf("valid response: %v", err)
	}
	if err := ws.CheckResponse(readResponse(t, ok, nil), "AAECAwQFBgcICQoLDA0ODw=="); !errors.Is(err, ws.ErrHandshake) {
		t.Fatalf("other key: %v", err)
	}
	if err := ws.CheckResponse(nil, key); !errors.Is(err, ws.ErrHandshake) {
		t.Fatalf("nil response: %v", err)
	}
}
