package codec_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// A server that answers every sequence number before it is asked anything
// (here: one reply per number, sent at connect) must not have those replies
// taken for the requests that later get the same numbers. A ReceiveSync
// client has no reader between requests, so the stale replies wait in its
// socket; it drains them before each request (weakness 5 of issue 13). The
// event-mode client drops them as they arrive. Every request gets its own
// answer and the stale ones are counted as unknown, exactly.
func TestRepliesSentBeforeTheRequestNeverMatchIt(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			sent := make(chan struct{})
			addr, served := serveOnce(t, func(c net.Conn) {
				unsolicited(c)
				close(sent)
				baseline.ServeConn(c, baseline.SRMP, baseline.Echo(baseline.SRMP), nil)
			})
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, m.mode)
			<-sent // on loopback a written byte is in the peer's socket once Write returns
			if m.mode == transport.ReceiveEvent {
				waitUnknown(t, c.Conn(), 256) // the receive goroutine drops them as they come
			}
			requestEach(t, c, 512, 256)
			c.Close()
			<-served
		})
	}
}

// unsolicited writes a reply for each of the 256 sequence numbers.
func unsolicited(c net.Conn) {
	var b []byte
	for seq := range 256 {
		b = append(b, 0x80, byte(seq), 5, 0) // kind reply, flag 0, 5 bytes
		b = append(b, "stale"...)
	}
	c.Write(b)
}

// waitUnknown waits until c has counted n unknown replies.
func waitUnknown(t *testing.T, c *codec.Conn, n uint64) {
	t.Helper()
	testwait.For(t, 10*time.Second, fmt.Sprintf("%d unknown replies", n), func() bool { return c.Stats().Unknown >= n })
}

// Not only at connect: replies a server sends unasked between two requests
// of a ReceiveSync client are drained before the next request, dropped as
// unknown and never taken for the next requests' replies.
func TestSyncClientDrainsStrayRepliesBetweenRequests(t *testing.T) {
	leakcheck.Check(t)
	answered := make(chan struct{}) // the client has read the first reply
	answer := sync.OnceFunc(func() { close(answered) })
	defer answer() // also when the test fails before it
	sent := make(chan struct{})
	addr, served := serveOnce(t, func(c net.Conn) {
		first := true
		for echoOne(c) == nil {
			if first {
				first = false
				<-answered // else the stray replies could come with the first reply, in its read
				unsolicited(c)
				close(sent)
			}
		}
	})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveSync)
	r, err := c.Request(context.Background(), request("first"))
	if got := replyText(t, r, err); got != "first" {
		t.Fatalf("first request got %q", got)
	}
	answer()
	<-sent
	requestEach(t, c, 512, 256)
	c.Close()
	<-served
}

// The drain before each request of a ReceiveSync client also reads the
// end of the stream of a peer that closed after its last reply: the next
// request fails as never sent (ErrNotSent, which rpc retries on a new
// connection) instead of going out on the dead connection and failing as
// a request that may have been served.
func TestSyncClientSeesAPeerThatClosedBeforeItsNextRequest(t *testing.T) {
	leakcheck.Check(t)
	addr, closed := serveOnce(t, func(c net.Conn) { echoOne(c) }) // on loopback the FIN is in the client's socket once Close returns
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveSync)
	r, err := c.Request(context.Background(), request("only"))
	if got := replyText(t, r, err); got != "only" {
		t.Fatalf("first request got %q", got)
	}
	<-closed
	_, err = c.Request(context.Background(), request("after the close"))
	if !errors.Is(err, codec.ErrConnClosed) || !errors.Is(err, codec.ErrNotSent) {
		t.Fatalf("a request after the peer closed: %v, want ErrConnClosed and ErrNotSent", err)
	}
}

// echoOne reads one SRMP request from c and writes it back as its reply
// (the same flag bits, sequence number and payload).
func echoOne(c net.Conn) error {
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	body := make([]byte, binary.LittleEndian.Uint16(hdr[2:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return err
	}
	hdr[0] = 0x80 // kind reply
	_, err := c.Write(append(hdr[:], body...))
	return err
}

// requestEach makes n requests, each of which must get its own answer,
// and checks that exactly unknown replies were dropped as unknown and none
// is left in flight.
func requestEach(t *testing.T, c *codec.Client, n int, unknown uint64) {
	t.Helper()
	for i := range n {
		want := fmt.Sprintf("request %d", i)
		r, err := c.Request(context.Background(), request(want))
		if got := replyText(t, r, err); got != want {
			t.Fatalf("request %d got %q", i, got)
		}
	}
	if got := c.Conn().Stats(); got.Unknown != unknown || got.InFlight != 0 {
		t.Fatalf("counted %d unknown replies (want %d), %d in flight (want 0)", got.Unknown, unknown, got.InFlight)
	}
}

// serveOnce listens on loopback and runs serve on the first connection,
// which it closes after; done is closed once that has happened. serve
// never runs if the listener fails first (it is closed when the test ends).
func serveOnce(t *testing.T, serve func(c net.Conn)) (addr string, done <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	return l.Addr().String(), ended
}

// A length-field reply has no number: a frame the server sends unasked
// between two requests of a ReceiveSync client would be taken for the next
// request's reply were it read after that request was queued. It is read
// before the request is sent, dropped and counted as unknown, and every
// request gets its own echo, the queue staying in step.
func TestSyncClientDropsAStrayLengthFieldFrameBetweenRequests(t *testing.T) {
	leakcheck.Check(t)
	answered := make(chan struct{}) // the client has read the first reply
	answer := sync.OnceFunc(func() { close(answered) })
	defer answer() // also when the test fails before it
	sent := make(chan struct{})
	addr, served := serveOnce(t, func(c net.Conn) {
		for n := 0; ; n++ {
			var hdr [2]byte
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			body := make([]byte, binary.LittleEndian.Uint16(hdr[:]))
			if _, err := io.ReadFull(c, body); err != nil {
				return
			}
			if _, err := c.Write(append(hdr[:], body...)); err != nil {
				return
			}
			if n == 0 {
				<-answered
				c.Write([]byte{5, 0, 's', 't', 'a', 'l', 'e'})
				close(sent)
			}
		}
	})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: lfPipeline()}, transport.ReceiveSync)
	call := func(s string) string {
		t.Helper()
		r, err := c.RequestPacket(context.Background(), packet.Wrap([]byte(s)))
		if err != nil {
			t.Fatalf("request %q: %v", s, err)
		}
		defer r.Release()
		return string(r.Bytes())
	}
	if got := call("first"); got != "first" {
		t.Fatalf("first request got %q", got)
	}
	answer()
	<-sent
	for i := range 3 {
		want := fmt.Sprintf("request %d", i)
		if got := call(want); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if st := c.Conn().Stats(); st.Unknown != 1 || st.InFlight != 0 {
		t.Fatalf("stats %+v, want the stale frame unknown and nothing in flight", st)
	}
	c.Close()
	<-served
}

// A Handler that panics on a message read before a ReceiveSync client's
// request was sent panics in that request's caller, and the request, never
// sent, leaves nothing behind: the next request gets its own answer and
// nothing stays in flight.
func TestSyncClientHandlerPanicOnStaleBytesLeavesNoRequest(t *testing.T) {
	leakcheck.Check(t)
	sent := make(chan struct{})
	addr, served := serveOnce(t, func(c net.Conn) {
		c.Write([]byte{0x40, 7, 4, 0, 'p', 'u', 's', 'h'}) // a request from the server: the client's Handler gets it
		close(sent)
		baseline.ServeConn(c, baseline.SRMP, baseline.Echo(baseline.SRMP), nil)
	})
	handler := func(*codec.Conn, any) { panic("handler") }
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Handler: handler}, transport.ReceiveSync)
	<-sent
	func() {
		defer func() {
			if v := recover(); v != "handler" {
				t.Fatalf("recovered %v, want the Handler's panic", v)
			}
		}()
		c.Request(context.Background(), request("first"))
	}()
	if st := c.Conn().Stats(); st.InFlight != 0 {
		t.Fatalf("after the panic %d in flight, want 0", st.InFlight)
	}
	r, err := c.Request(context.Background(), request("second"))
	if got := replyText(t, r, err); got != "second" {
		t.Fatalf("second request got %q", got)
	}
	c.Close()
	<-served
}
