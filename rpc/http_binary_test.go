package rpc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

type packetCtl struct{}

// Echo is NewLife's BenchController.EchoPacket(IPacket pk) registered by
// reflection.
func (packetCtl) Echo(b []byte) []byte { return b }

// binaryServer serves Bench/EchoPacket (Handle), Pk/Echo (Register) and
// Pk/Len, a []byte parameter with a number result.
func binaryServer(t *testing.T) string {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, srv.Register(packetCtl{}, rpc.WithPrefix("Pk")))
		must(t, rpc.Handle(srv, "Pk/Len", func(_ context.Context, b []byte) (int, error) { return len(b), nil }))
	})
	return addr
}

// NewLife's ApiHandler.Prepare hands an action whose one parameter is a
// packet the request's data as it is (its fast path, before any parsing),
// and NewLife's HttpEncoder.Encode writes a packet result as the body:
// whatever the Content-Type, the bytes come back unchanged.
func TestHTTPBinaryBodyIsRaw(t *testing.T) {
	addr := binaryServer(t)
	hc := dialRaw(t, addr)
	bin := "\x00\x01{\"a\":1}\xff\r\n"
	for _, tc := range []struct{ name, head, body string }{
		// ApiHelper.BuildContent / ApiHttpClient posting byte[].
		{"octet-stream", "POST /Bench/EchoPacket HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n", "hello"},
		// NewLife.Remoting's HttpEncoder.CreateRequest: byte[] under a JSON type.
		{"json type, raw bytes", "POST /Bench/EchoPacket HTTP/1.1\r\nHost: x\r\nContent-Type:application/json\r\n", "hello"},
		{"json type, a JSON string", "POST /Bench/EchoPacket HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", `"hello"`},
		{"json type, an object", "POST /Bench/EchoPacket HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", `{"Token":"t","a":1}`},
		{"form type", "POST /Bench/EchoPacket HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n", "hello"},
		{"no type", "POST /Bench/EchoPacket HTTP/1.1\r\nHost: x\r\n", "hello"},
		{"other type", "POST /Bench/EchoPacket HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-gzip\r\n", bin},
		{"binary", "POST /Bench/EchoPacket HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n", bin},
		{"registered", "POST /Pk/Echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", "hello"},
		{"case-insensitive name", "POST /pk/ECHO HTTP/1.1\r\nHost: x\r\n", "a=b"},
	} {
		resp, got := hc.httpDo(fmt.Sprintf("%sContent-Length: %d\r\n\r\n%s", tc.head, len(tc.body), tc.body))
		if resp.StatusCode != 200 || got != tc.body || resp.Header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("%s: %d %q %q, want 200 application/octet-stream %q", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), got, tc.body)
		}
	}
}

// Without a body a packet parameter gets the query string as it is (not
// decoded), as NewLife's HttpEncoder.Decode hands it; a result that is not
// a packet keeps the JSON envelope.
func TestHTTPBinaryQueryAndEnvelope(t *testing.T) {
	addr := binaryServer(t)
	hc := dialRaw(t, addr)
	if resp, got := hc.httpDo("GET /Bench/EchoPacket?aGVs%20bG8 HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || got != "aGVs%20bG8" {
		t.Errorf("GET with a query: %d %q, want the query as it is", resp.StatusCode, got)
	}
	body := `{"a":"1"}`
	_, got := hc.httpDo(fmt.Sprintf("POST /Pk/Len HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	if want := fmt.Sprintf(`{"action":"Pk/Len","code":0,"data":%d}`, len(body)); got != want {
		t.Errorf("Pk/Len: %s, want %s", got, want)
	}
}

// Over SRMP the same bytes reach the same actions as they are, and come
// back as the reply's data block: the two transports agree.
func TestSRMPBinaryAgreesWithHTTP(t *testing.T) {
	addr := binaryServer(t)
	rc := dialRaw(t, addr)
	for i, data := range []string{"hello", `"hello"`, `{"Token":"t","a":1}`, "\x00\x01{\"a\":1}\xff\r\n"} {
		for j, action := range []string{"Bench/EchoPacket", "Pk/Echo"} {
			if b0, got := callSRMP(t, rc, byte(2*i+j+1), action, data); b0 != b0Reply || got != data {
				t.Errorf("SRMP %s %q: %02x %q, want 81 and the same bytes", action, data, b0, got)
			}
		}
	}
}
