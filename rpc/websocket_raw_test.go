package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
	"github.com/lifenet/lifenet/rpc"
)

// wsOpen sends the opening handshake on a raw connection and checks the 101.
func wsOpen(t *testing.T, addr string) *rawConn {
	t.Helper()
	rc := dialRaw(t, addr)
	key, err := ws.NewKey(rand.Reader)
	must(t, err)
	rc.write(ws.AppendRequest(nil, addr, "/", key, "SRMP"))
	resp, err := http.ReadResponse(rc.r, nil)
	must(t, err)
	if err := ws.CheckResponse(resp, key); err != nil {
		t.Fatal(err)
	}
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "SRMP" {
		t.Errorf("subprotocol %q, want SRMP", p)
	}
	return rc
}

// readWS reads one WebSocket frame (the server's are never masked).
func (rc *rawConn) readWS() ws.Frame {
	rc.t.Helper()
	var buf []byte
	chunk := make([]byte, 1)
	for {
		f, n, err := ws.Parse(buf, 1<<20)
		if err != nil {
			rc.t.Fatalf("a bad frame from the server: %v", err)
		}
		if n > 0 {
			if f.Masked {
				rc.t.Errorf("the server masked a frame")
			}
			if n != len(buf) {
				rc.t.Fatalf("read past a frame") // one byte at a time: cannot happen
			}
			return f
		}
		if _, err := rc.r.Read(chunk); err != nil {
			rc.t.Fatalf("reading a WebSocket frame: %v", err)
		}
		buf = append(buf, chunk[0])
	}
}

var testMask = [4]byte{0x12, 0x34, 0x56, 0x78}

func TestBatteryWebSocketRaw(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	r1 := unhex(t, "01 01 1B 00 09 42 65 6E 63 68 2F 41 64 64 0D 00 00 00 7B 22 61 22 3A 31 2C 22 62 22 3A 32 7D")
	r2 := unhex(t, "81 01 0F 00 | 09 42 65 6E 63 68 2F 41 64 64 | 01 00 00 00 | 33")
	for _, c := range []struct {
		name string
		mask *[4]byte
		op   ws.Opcode
	}{
		{"unmasked binary (NewLife v11 client)", nil, ws.Binary},
		{"masked binary", &testMask, ws.Binary},
		{"masked text", &testMask, ws.Text},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := wsOpen(t, addr)
			rc.write(ws.AppendFrame(nil, c.op, r1, c.mask))
			f := rc.readWS()
			if f.Op != ws.Binary || !f.Fin || !bytes.Equal(f.Payload, r2) {
				t.Fatalf("reply frame %v fin %v % X; want one binary frame with R2", f.Op, f.Fin, f.Payload)
			}
		})
	}
}

func TestBatteryWebSocketControlFrames(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	rc := wsOpen(t, addr)
	rc.write(ws.AppendFrame(nil, ws.Ping, []byte("are you there"), &testMask))
	if f := rc.readWS(); f.Op != ws.Pong || string(f.Payload) != "are you there" {
		t.Errorf("ping answered with %v %q", f.Op, f.Payload)
	}
	rc.write(ws.AppendFrame(nil, ws.Ping, nil, nil))
	if f := rc.readWS(); f.Op != ws.Pong || len(f.Payload) != 0 {
		t.Errorf("empty unmasked ping answered with %v %q", f.Op, f.Payload)
	}
	// Calls still work between control frames.
	rc.write(ws.AppendFrame(nil, ws.Binary, srmp(b0Request, 9, body(t, "Bench/NoArg", nil)), &testMask))
	if f := rc.readWS(); !bytes.Equal(f.Payload, srmp(b0Reply, 9, body(t, "Bench/NoArg", "42"))) {
		t.Errorf("call after ping: % X", f.Payload)
	}
	rc.write(ws.AppendClose(nil, ws.CloseNormal, "bye", &testMask))
	f := rc.readWS()
	if code, _ := ws.CloseCode(f.Payload); f.Op != ws.Close || code != ws.CloseNormal {
		t.Errorf("close answered with %v code %d", f.Op, code)
	}
	rc.expectEOF()
}

func TestBatteryWebSocketEmptyClose(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	rc := wsOpen(t, addr)
	rc.write(ws.AppendClose(nil, 0, "", nil))
	if f := rc.readWS(); f.Op != ws.Close || len(f.Payload) != 0 {
		t.Errorf("an empty close answered with %v % X; want an empty close", f.Op, f.Payload)
	}
	rc.expectEOF()
}

// A frame that breaks RFC 6455 gets a close 1002, then the connection ends.
func TestBatteryWebSocketProtocolErrorCloses(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	rc := wsOpen(t, addr)
	rc.write([]byte{0x83, 0x00}) // opcode 3 is reserved

	f := rc.readWS()
	if code, _ := ws.CloseCode(f.Payload); f.Op != ws.Close || code != ws.CloseProtocolError {
		t.Errorf("a reserved opcode answered with %v code %d; want close 1002", f.Op, code)
	}
	rc.expectEOF()
}

// A frame whose length passes the frame limit gets a close 1009 (message
// too big), then the connection ends.
func TestWebSocketFramePastTheLimitCloses1009(t *testing.T) {
	_, addr := startServer(t, rpc.Config{Framer: codec.FramerConfig{MaxFrame: 1024}}, nil)
	rc := wsOpen(t, addr)
	rc.write([]byte{0x82, 0x7e, 0x10, 0x00}) // a binary frame of 4,096 bytes: its header alone
	f := rc.readWS()
	if code, _ := ws.CloseCode(f.Payload); f.Op != ws.Close || code != ws.CloseTooBig {
		t.Errorf("a frame past the limit answered with %v code %d; want close 1009", f.Op, code)
	}
	rc.expectEOF()
}

// SRMP frames are cut across WebSocket messages: two in one message, one
// split over two, and a message split across TCP writes.
func TestBatteryWebSocketFraming(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	rc := wsOpen(t, addr)
	two := append(srmp(b0Request, 1, body(t, "Bench/Add", addArgs{1, 2})), srmp(b0Request, 2, body(t, "Bench/NoArg", nil))...)
	rc.write(ws.AppendFrame(nil, ws.Binary, two, nil))
	want := map[byte][]byte{1: body(t, "Bench/Add", "3"), 2: body(t, "Bench/NoArg", "42")}
	for range 2 {
		f := rc.readWS()
		if len(f.Payload) < 4 || f.Payload[0] != b0Reply || !bytes.Equal(f.Payload[4:], want[f.Payload[1]]) {
			t.Fatalf("reply % X", f.Payload)
		}
		delete(want, f.Payload[1])
	}
	one := srmp(b0Request, 3, body(t, "Bench/EchoString", "split"))
	rc.write(ws.AppendFrame(nil, ws.Binary, one[:3], &testMask))
	rc.write(ws.AppendFrame(nil, ws.Binary, one[3:], nil))
	if f := rc.readWS(); !bytes.Equal(f.Payload, srmp(b0Reply, 3, body(t, "Bench/EchoString", "split"))) {
		t.Fatalf("split frame: % X", f.Payload)
	}
	msg := ws.AppendFrame(nil, ws.Binary, srmp(b0Request, 4, body(t, "Bench/EchoString", "tcp")), &testMask)
	for i := range msg {
		rc.write(msg[i : i+1])
	}
	if f := rc.readWS(); !bytes.Equal(f.Payload, srmp(b0Reply, 4, body(t, "Bench/EchoString", "tcp"))) {
		t.Fatalf("byte-by-byte message: % X", f.Payload)
	}
	// A large reply needs a 16-bit length.
	big := bytes.Repeat([]byte{7}, 3000)
	rc.write(ws.AppendFrame(nil, ws.Binary, srmp(b0Request, 5, body(t, "Bench/EchoPacket", big)), &testMask))
	if f := rc.readWS(); !bytes.Equal(f.Payload, srmp(b0Reply, 5, body(t, "Bench/EchoPacket", big))) {
		t.Fatalf("large reply: %d bytes", len(f.Payload))
	}
}

func TestBatteryWebSocketClient(t *testing.T) {
	srv, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "User/Login", func(context.Context, struct{}) (string, error) { return "", rpc.NewError(401, "Unauthorized") }))
	})
	pushes := make(chan string, 2)
	cl := dialClient(t, "ws://"+addr+"/srmp", rpc.ClientConfig{OnPush: func(action string, data []byte) {
		pushes <- action + ":" + string(data)
	}})
	ctx := context.Background()
	if n, err := rpc.Call[int32](ctx, cl, "Bench/Add", addArgs{2, 3}); err != nil || n != 5 {
		t.Errorf("Bench/Add: %d, %v", n, err)
	}
	big := bytes.Repeat([]byte("z"), 70000)
	if b, err := rpc.Call[[]byte](ctx, cl, "Bench/EchoPacket", big); err != nil || !bytes.Equal(b, big) {
		t.Errorf("EchoPacket 70000 bytes: %d bytes, %v", len(b), err)
	}
	if _, err := rpc.Call[string](ctx, cl, "User/Login", nil); apiCode(err) != 401 {
		t.Errorf("User/Login: %v", err)
	}
	if n, err := srv.PushAll("Notify", "over ws"); err != nil || n != 1 {
		t.Errorf("PushAll: %d, %v", n, err)
	}
	if p := recv(t, pushes, "the push"); p != "Notify:over ws" {
		t.Errorf("push %q", p)
	}
}

// The ws:// client answers a server's ping with a masked pong, and a
// server's close ends the connection: the call waiting on it fails with
// ErrConnClosed instead of hanging.
func TestBatteryWebSocketClientPingAndClose(t *testing.T) {
	leakcheck.Check(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	pong := make(chan ws.Frame, 1)
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		c.Write(ws.AppendAccept(nil, req, "SRMP"))
		c.Write(ws.AppendFrame(nil, ws.Ping, []byte("hi"), nil))
		// The call's request may come before the pong (it follows the
		// handshake at once): take both, in either order, then close.
		var sawPong, sawCall bool
		for !sawPong || !sawCall {
			f, ok := readClientFrame(r)
			if !ok {
				return
			}
			switch f.Op {
			case ws.Pong:
				sawPong = true
				pong <- f
			case ws.Binary:
				sawCall = true
			}
		}
		c.Write(ws.AppendClose(nil, ws.CloseNormal, "bye", nil))
		io.Copy(io.Discard, r)
	}()
	cl := dialClient(t, "ws://"+ln.Addr().String()+"/", rpc.ClientConfig{})
	_, err = rpc.Call[int32](context.Background(), cl, "Bench/Add", addArgs{1, 2})
	if !errors.Is(err, codec.ErrConnClosed) {
		t.Errorf("call over a WebSocket the server closed: %v, want ErrConnClosed", err)
	}
	f := recv(t, pong, "the pong")
	if !f.Masked || string(f.Payload) != "hi" {
		t.Errorf("pong masked %v payload %q, want a masked %q", f.Masked, f.Payload, "hi")
	}
	cl.Close()
	<-served
}

// readClientFrame reads the next frame from r.
func readClientFrame(r *bufio.Reader) (ws.Frame, bool) {
	var buf []byte
	for {
		b, err := r.ReadByte()
		if err != nil {
			return ws.Frame{}, false
		}
		buf = append(buf, b)
		f, n, err := ws.Parse(buf, 1<<20)
		if err != nil {
			return ws.Frame{}, false
		}
		if n > 0 {
			return f, true
		}
	}
}

// The 101 names SRMP only where the client can take it: when offered, or
// when the client offered none and is no browser (NewLife's clients); a
// browser offering none, or others, gets none, since it fails a handshake
// naming a subprotocol it did not offer.
func TestWebSocketSubprotocolAsOffered(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, nil)
	for _, c := range []struct {
		name, headers, want string
	}{
		{"offered", "Sec-WebSocket-Protocol: SRMP\r\n", "SRMP"},
		{"offered among others, in lower case", "Sec-WebSocket-Protocol: chat, srmp\r\n", "srmp"},
		{"none offered, no browser", "", "SRMP"},
		{"none offered by a browser", "Origin: http://example.com\r\n", ""},
		{"others offered", "Origin: http://example.com\r\nSec-WebSocket-Protocol: chat\r\n", ""},
	} {
		rc := dialRaw(t, addr)
		key, err := ws.NewKey(rand.Reader)
		must(t, err)
		rc.write([]byte("GET / HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n" + c.headers + "\r\n"))
		resp, err := http.ReadResponse(rc.r, nil)
		must(t, err)
		if err := ws.CheckResponse(resp, key); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, ok := resp.Header["Sec-Websocket-Protocol"]; c.want == "" && ok || c.want != "" && (len(got) != 1 || got[0] != c.want) {
			t.Errorf("%s: Sec-WebSocket-Protocol %q, want %q", c.name, got, c.want)
		}
		rc.c.Close()
	}
}

// An upgrade asking for a WebSocket version other than 13 gets 426 with
// the version the server speaks (RFC 6455 §4.4), not an HTTP answer for
// its path.
func TestWebSocketOtherVersionIs426(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, nil)
	rc := dialRaw(t, addr)
	key, err := ws.NewKey(rand.Reader)
	must(t, err)
	rc.write([]byte("GET / HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 8\r\n\r\n"))
	resp, err := http.ReadResponse(rc.r, nil)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Sec-WebSocket-Version") != "13" {
		t.Errorf("status %d, Sec-WebSocket-Version %q; want 426 and 13", resp.StatusCode, resp.Header.Get("Sec-WebSocket-Version"))
	}
	rc.expectEOF()
}
