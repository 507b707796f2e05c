package rpc_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// srmpBig builds an SRMP frame of any size (the 8-byte header past
// 65,534 bytes, as NewLife writes it).
func srmpBig(b0, seq byte, payload []byte) []byte {
	if len(payload) < 0xFFFF {
		return srmp(b0, seq, payload)
	}
	f := []byte{b0, seq, 0xFF, 0xFF, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(f[4:], uint32(len(payload)))
	return append(f, payload...)
}

// nameBody is a request body with an action name of any length.
func nameBody(name, data string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(name)))
	b = append(b, name...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// boundsServer serves a map action, a bytes action and a catch-all.
func boundsServer(t *testing.T, cfg rpc.Config) string {
	_, addr := startServer(t, cfg, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "T/Map", func(_ context.Context, m map[string]any) (int, error) { return len(m), nil }))
		must(t, rpc.Handle(srv, "T/Len", func(_ context.Context, b []byte) (int, error) { return len(b), nil }))
	})
	return addr
}

// issue 26 F5: a 5 MiB action name was answered with a 404 of 10 MiB (the
// name in the reply's name and again in its message). A name past 1 KiB
// is refused with a 400 that says so, and the reply repeats at most 127
// bytes of it (MaxActionLen: its length stays one varint byte).
func TestLongActionNameReplyIsBounded(t *testing.T) {
	addr := boundsServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	name := strings.Repeat("A", 5<<20)
	rc.write(srmpBig(b0Request, 1, nameBody(name, "")))
	f := rc.readFrame()
	if f.b0 != b0Error || len(f.payload) > 512 {
		t.Fatalf("a 5 MiB name: %02x, a reply of %d bytes; want an error reply of under 512", f.b0, len(f.payload))
	}
	n := int(f.payload[0]) // a one-byte varint: the name is cut to 127
	code := binary.LittleEndian.Uint32(f.payload[1+n:])
	msg := string(f.payload[1+n+8:])
	if n != rpc.MaxActionLen || code != 400 || !strings.Contains(msg, "action name of 5242880 bytes, limit 1024") {
		t.Fatalf("a 5 MiB name: name of %d bytes, code %d, %q", n, code, msg)
	}
	// A name up to 1 KiB is looked up (a "*" action would serve it): its
	// 404 repeats 127 bytes of it.
	long := strings.Repeat("B", 1000)
	rc.write(srmp(b0Request, 2, nameBody(long, "")))
	f = rc.readFrame()
	if n := int(f.payload[0]); f.b0 != b0Error || len(f.payload) > 512 || !strings.Contains(string(f.payload[1+n+8:]), strings.Repeat("B", rpc.MaxActionLen)+"…") {
		t.Fatalf("a 1000-byte name: %02x %q", f.b0, f.payload)
	}
	if b0, got := callSRMP(t, rc, 3, "Bench/EchoString", "still served"); b0 != b0Reply || got != "still served" {
		t.Fatalf("the next call: %02x %q", b0, got)
	}
}

// Over HTTP the path is the name: a long one gets the same 400, and the
// envelope repeats 127 bytes of it.
func TestLongActionNameOverHTTPIsBounded(t *testing.T) {
	addr := boundsServer(t, rpc.Config{})
	hc := dialRaw(t, addr)
	path := strings.Repeat("C", 60<<10)
	resp, got := hc.httpDo("GET /" + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 || len(got) > 512 || !strings.Contains(got, `"code":400`) || !strings.Contains(got, "action name of 61440 bytes") {
		t.Fatalf("a 60 KiB path: %d, %d bytes %.200q", resp.StatusCode, len(got), got)
	}
	resp, got = hc.httpDo("GET /" + path[:1000] + " HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 || len(got) > 512 || !strings.Contains(got, `"code":404`) {
		t.Fatalf("a 1000-byte path: %d, %d bytes %.200q", resp.StatusCode, len(got), got)
	}
}

// A value that does not bind is named in the 400, cut to 64 bytes: a 1 MiB
// string for a number was a 400 of 2 MiB.
func TestBadValueEchoIsBounded(t *testing.T) {
	addr := boundsServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	big := strings.Repeat("9x", 512<<10)
	rc.write(srmpBig(b0Request, 1, reqBody("Bench/Add", `{"a":"`+big+`","b":1}`)))
	f := rc.readFrame()
	if n := int(f.payload[0]); f.b0 != b0Error || len(f.payload) > 512 || !strings.Contains(string(f.payload[1+n+8:]), "…") {
		t.Fatalf("a 1 MiB bad number: %02x, %d bytes: %.300q", f.b0, len(f.payload), f.payload)
	}
	hc := dialRaw(t, addr)
	form := "a=" + big
	resp, got := hc.httpDo(fmt.Sprintf("POST /Bench/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", len(form), form))
	if resp.StatusCode != 200 || len(got) > 512 || !strings.Contains(got, `"code":400`) {
		t.Fatalf("a 1 MiB bad number in a form: %d, %d bytes", resp.StatusCode, len(got))
	}
}

// keysObject is a JSON object of n entries (one key, repeated: each counts).
func keysObject(n int) string {
	return `{` + strings.Repeat(`"a":0,`, n-1) + `"a":0}`
}

// An argument document of more than Config.MaxArgKeys keys, at any depth,
// is a 400 before it is decoded (a 10 MiB object of 870 k keys cost
// 120 MB); a []byte parameter's data is not decoded, so not counted.
func TestArgumentKeysAreBounded(t *testing.T) {
	addr := boundsServer(t, rpc.Config{})
	rc := dialRaw(t, addr)
	const limit = 1 << 16
	for i, tc := range []struct {
		action, data string
		ok           bool
	}{
		{"T/Map", keysObject(limit), true},
		{"T/Map", keysObject(limit + 1), false},
		{"T/Map", `{"x":[` + strings.Repeat(`{"a":0},`, limit) + `{}]}`, false}, // nested keys count
		{"Bench/EchoString", keysObject(limit + 1), false},
		{"T/Len", keysObject(limit + 1), true},
	} {
		rc.write(srmpBig(b0Request, byte(i+1), reqBody(tc.action, tc.data)))
		f := rc.readFrame()
		n := int(f.payload[0])
		switch {
		case tc.ok && f.b0 != b0Reply:
			t.Errorf("%s, %d bytes: %02x %q, want a reply", tc.action, len(tc.data), f.b0, f.payload[1+n+8:])
		case !tc.ok && (f.b0 != b0Error || !strings.Contains(string(f.payload[1+n+8:]), "more than 65536 keys (Config.MaxArgKeys)")):
			t.Errorf("%s, %d bytes: %02x %.200q, want a 400 naming MaxArgKeys", tc.action, len(tc.data), f.b0, f.payload)
		}
	}
	hc := dialRaw(t, addr)
	form := strings.Repeat("a=1&", limit) + "a=1"
	resp, got := hc.httpDo(fmt.Sprintf("POST /T/Map HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", len(form), form))
	if resp.StatusCode != 200 || !strings.Contains(got, `"code":400`) || !strings.Contains(got, "Config.MaxArgKeys") {
		t.Fatalf("a form of %d fields: %d %.200q", limit+1, resp.StatusCode, got)
	}
	// The limit is the server's to set.
	addr = boundsServer(t, rpc.Config{MaxArgKeys: 10})
	rc = dialRaw(t, addr)
	if b0, got := callSRMP(t, rc, 1, "T/Map", keysObject(11)); b0 != b0Error || !strings.Contains(got, "more than 10 keys") {
		t.Fatalf("MaxArgKeys 10, 11 keys: %02x %q", b0, got)
	}
	if _, err := rpc.NewServer(rpc.Config{MaxArgKeys: -1}); err == nil {
		t.Fatal("MaxArgKeys -1 accepted")
	}
}
