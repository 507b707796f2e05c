package rpc_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/internal/ws"
	"github.com/lifenet/lifenet/transport"
)

// expireCfg is a server config whose partial units expire after 50 ms.
func expireCfg() rpc.Config {
	return rpc.Config{Framer: codec.FramerConfig{Expire: 50 * time.Millisecond}}
}

// The bytes the gateway holds of an incomplete unit (the first bytes while
// the protocol is undecided, an HTTP header or body, a WebSocket frame)
// expire like a partial SRMP frame: the connection ends Framer.Expire
// after the unit's first byte, counted as an expired frame. They used to
// be in no framer, so a client that sent part of a request and stalled
// kept the connection and its buffer until the idle timeout (20 min).
func TestGatewayPartialsExpire(t *testing.T) {
	cases := []struct {
		name    string
		ws      bool
		partial string
	}{
		{"srmp frame", false, string(srmp(b0Request, 1, make([]byte, 100))[:50])}, // the codec's own, for comparison
		{"undecided", false, "GE"},
		{"http header", false, "GET /Api/Info HTTP/1.1\r\nHost: x\r\n"},
		{"http body", false, "POST /Api/Info HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"},
		{"ws frame", true, "\x82\x7e\x03\xe8" + strings.Repeat("\x00", 10)}, // announces 1000 bytes, 10 sent
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, addr := startServer(t, expireCfg(), nil)
			rc := dialRaw(t, addr)
			if c.ws {
				rc = wsOpen(t, addr)
			}
			rc.write([]byte(c.partial))
			if _, err := io.ReadAll(rc.r); err != nil {
				t.Fatalf("the connection still holds a partial unit %v later: %v", testTimeout, err)
			}
			waitFor(t, "the close to be counted", func() bool {
				return srv.Transport().Stats().Closed[transport.ReasonProtocol] == 1
			})
		})
	}
}

// Only incomplete units expire: a keep-alive connection idle between
// requests, a WebSocket connection idle between frames and an SSE stream
// longer than Expire (with a request pipelined after it, which is
// ignored, not held) all live on.
func TestGatewayWholeUnitsDoNotExpire(t *testing.T) {
	g := newGate(t, 1)
	_, addr := startServer(t, expireCfg(), func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.HandleStream(srv, "Events/Held", func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				if g.wait(ctx) == nil {
					yield(1, nil)
				}
			}
		}))
	})
	t.Cleanup(g.open)
	const get = "GET /Bench/NoArg HTTP/1.1\r\nHost: x\r\n\r\n"
	keep := dialRaw(t, addr)
	keep.httpDo(get)
	wsc := wsOpen(t, addr)
	sse := dialRaw(t, addr)
	sse.write([]byte("GET /Events/Held HTTP/1.1\r\nHost: x\r\n\r\n" + get[:10]))
	recv(t, g.entered, "the stream to start")

	time.Sleep(4 * 50 * time.Millisecond) // a negative: nothing may expire meanwhile

	if resp, b := keep.httpDo(get); resp.StatusCode != 200 || !strings.Contains(b, `"data":42`) {
		t.Errorf("keep-alive connection after an idle while: %d %q", resp.StatusCode, b)
	}
	wsc.write(ws.AppendFrame(nil, ws.Binary, srmp(b0Request, 1, body(t, "Bench/NoArg", nil)), &testMask))
	if f := wsc.readWS(); len(f.Payload) == 0 {
		t.Error("WebSocket connection after an idle while: empty answer")
	}
	g.open()
	if _, b := sse.readHTTP(); !strings.Contains(b, `"data":1`) { // read to the connection's end
		t.Errorf("SSE stream longer than Expire: %q", b)
	}
}

// A unit the gateway completes is being served, not held: an HTTP request
// or WebSocket frame that arrived in two reads and is served by an inline
// action for longer than Framer.Expire (or waits that long to write its
// answer) gets its answer and keeps its connection. The gateway's clock
// used to run on through the serving, so its timer ended the connection
// under the handler as an expired partial unit. In memory, so each write
// is one read of the server.
func TestGatewayServedUnitsDoNotExpire(t *testing.T) {
	// The gap between a unit's two writes is a small share of Expire, so a
	// loaded machine does not stretch it past Expire (which would end the
	// connection rightly); the action runs three times Expire.
	const expire, gap = 250 * time.Millisecond, 5 * time.Millisecond
	srv, _ := startServer(t, rpc.Config{Framer: codec.FramerConfig{Expire: expire}}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Slow/Inline", func(context.Context, struct{}) (int32, error) {
			time.Sleep(3 * expire)
			return 7, nil
		}, rpc.WithInline()))
	})
	l := memnet.Listen("rpc")
	must(t, srv.Serve(l))

	t.Run("http", func(t *testing.T) {
		rc := dialMem(t, l)
		req := "GET /Slow/Inline HTTP/1.1\r\nHost: x\r\n\r\n"
		rc.write([]byte(req[:20]))
		time.Sleep(gap)
		rc.write([]byte(req[20:]))
		resp, got := rc.readHTTP()
		if resp.StatusCode != 200 || got != `{"action":"Slow/Inline","code":0,"data":7}` {
			t.Fatalf("%d %s", resp.StatusCode, got)
		}
		if resp, got := rc.httpDo("GET /Api/Info HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 {
			t.Fatalf("the connection after the served request: %d %s", resp.StatusCode, got)
		}
	})
	t.Run("websocket", func(t *testing.T) {
		rc := dialMem(t, l)
		key, err := ws.NewKey(rand.Reader)
		must(t, err)
		rc.write(ws.AppendRequest(nil, "rpc", "/", key, "SRMP"))
		resp, err := http.ReadResponse(rc.r, nil)
		must(t, err)
		must(t, ws.CheckResponse(resp, key))
		f := ws.AppendFrame(nil, ws.Binary, srmp(b0Request, 1, body(t, "Slow/Inline", nil)), &testMask)
		rc.write(f[:5])
		time.Sleep(gap)
		rc.write(f[5:])
		if got := rc.readWS(); !bytes.Equal(got.Payload, srmp(b0Reply, 1, body(t, "Slow/Inline", "7"))) {
			t.Fatalf("answer % x", got.Payload)
		}
		rc.write(ws.AppendFrame(nil, ws.Binary, srmp(b0Request, 2, body(t, "Api/Info", nil)), &testMask))
		if got := rc.readWS(); len(got.Payload) == 0 {
			t.Fatal("the connection after the served frame: empty answer")
		}
	})
	if n := srv.Transport().Stats().Closed[transport.ReasonProtocol]; n != 0 {
		t.Errorf("%d connections closed as protocol violations", n)
	}
}

// A unit trickled a byte a read still expires Framer.Expire after its
// first byte: a read that completes nothing leaves the unit's clock where
// it was (the gateway stops it only while a read is handled).
func TestGatewayTrickledUnitExpires(t *testing.T) {
	const expire = 50 * time.Millisecond
	srv, _ := startServer(t, expireCfg(), nil)
	l := memnet.Listen("rpc")
	must(t, srv.Serve(l))
	rc := dialMem(t, l)
	head := "GET /Api/Info HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nX-Pad: " + strings.Repeat("p", 40) + "\r\n"
	start := time.Now()
	for i := range len(head) {
		if _, err := rc.c.Write([]byte{head[i]}); err != nil {
			if d := time.Since(start); d < expire {
				t.Fatalf("ended after %v, before Expire (%v)", d, expire)
			}
			waitFor(t, "the close to be counted", func() bool {
				return srv.Transport().Stats().Closed[transport.ReasonProtocol] == 1
			})
			return
		}
		time.Sleep(expire / 5)
	}
	t.Fatalf("a header trickled for %v (Expire %v) was still held", time.Since(start), expire)
}
