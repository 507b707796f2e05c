package codec_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// In ReceiveSync mode nothing reads unless a Request waits, so RequestAsync
// is refused with ErrAsyncNeedsEvents (and its message released).
func TestSyncClientRefusesRequestAsync(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveSync)
	err := c.RequestAsync(context.Background(), request("x"), func(*codec.Message, error) { t.Error("callback ran") })
	if !errors.Is(err, codec.ErrAsyncNeedsEvents) {
		t.Fatalf("RequestAsync on a sync client: %v, want ErrAsyncNeedsEvents", err)
	}
	r, err := c.Request(context.Background(), request("still works"))
	if got := replyText(t, r, err); got != "still works" {
		t.Fatalf("reply %q", got)
	}
}

// The reader gives up (its context ends) while others wait: the turn passes
// on and their replies still arrive.
func TestSyncClientReaderLeavesTurnToOthers(t *testing.T) {
	leakcheck.Check(t)
	asked := make(chan struct{}, 1)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		if string(m.PayloadBytes()) == "never" {
			asked <- struct{}{}
			return
		}
		k := m.Keep() // answered after the handler returns
		time.AfterFunc(100*time.Millisecond, func() { echoKept(c, k) })
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveSync)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { // first in: likely the reader when its context ends
		if _, err := c.Request(ctx, request("never")); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("abandoned request: %v", err)
		}
	})
	select { // the first request is sent and waiting: the others come after it
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the first request never reached the server")
	}
	for i := range 8 {
		wg.Go(func() {
			body := fmt.Sprint(i)
			r, err := c.Request(context.Background(), request(body))
			if err != nil {
				t.Errorf("request %s: %v", body, err)
				return
			}
			if got := replyText(t, r, nil); got != body {
				t.Errorf("request %s got %s", body, got)
			}
		})
	}
	wg.Wait()
}

// Messages the server pushes reach the Handler on the waiting caller's
// goroutine, in order with the reply.
func TestSyncClientHandlesPushesWhileWaiting(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		for i := range 3 {
			c.Write(codec.NewMessage(codec.KindOneWay, 0, 0, payload(fmt.Appendf(nil, "push %d", i))))
		}
		echoSRMP(c, msg)
	}})
	var pushes []string // no lock: the Handler runs inside Request, on this goroutine
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Handler: func(_ *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		if !m.Borrowed() {
			t.Error("push not borrowed")
		}
		pushes = append(pushes, string(m.PayloadBytes()))
	}}, transport.ReceiveSync)
	r, err := c.Request(context.Background(), request("hi"))
	if got := replyText(t, r, err); got != "hi" {
		t.Fatalf("reply %q", got)
	}
	if fmt.Sprint(pushes) != "[push 0 push 1 push 2]" {
		t.Fatalf("pushes before the reply: %q", pushes)
	}
}

// A reply that breaks the framing (here, one declaring a 1 GiB frame) ends
// the client's connection as a protocol violation, and the waiting request
// fails instead of hanging — whichever goroutine reads.
func TestClientProtocolViolationFailsRequest(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				io.ReadFull(c, make([]byte, 4+len("bad")))                      // the request
				c.Write([]byte{0x81, 0x01, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x40}) // a reply declaring 1 GiB
				io.Copy(io.Discard, c)
			}()
			c := dialCodec(t, "tcp", l.Addr().String(), codec.Options{
				Pipeline: codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{MaxFrame: 1024}))}, m.mode)
			if _, err := c.Request(context.Background(), request("bad")); !errors.Is(err, codec.ErrConnClosed) {
				t.Fatalf("request: %v", err)
			}
			if r := c.Transport().Session().Reason(); r != transport.ReasonProtocol {
				t.Fatalf("closed with reason %v", r)
			}
		})
	}
}

// A ReceiveSync client reads into one buffer and lends it to the pipeline:
// replies that share it (past the size below which a kept reply is
// copied) keep their bytes while later requests read on, all held at once.
func TestSyncClientRepliesOutliveTheNextReads(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveSync)
	var replies []*codec.Message
	defer func() {
		for _, r := range replies {
			r.Release()
		}
	}()
	body := func(i int) string { return strings.Repeat(string(rune('a'+i)), 3000) }
	for i := range 8 {
		r, err := c.Request(context.Background(), request(body(i)))
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, r)
	}
	for i, r := range replies {
		if got := string(r.PayloadBytes()); got != body(i) {
			t.Fatalf("reply %d changed after later reads: %.10q...", i, got)
		}
	}
}

// StartReceiving, called while requests wait (one of them reading), hands
// the connection to a receive goroutine: every waiting request still gets
// its own reply, RequestAsync works, a push reaches the Handler with no
// request waiting, and the server's close is noticed with nobody calling.
func TestSyncClientStartReceiving(t *testing.T) {
	leakcheck.Check(t)
	srv, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		if m.Kind == codec.KindOneWay { // "push me": one push back
			c.Write(codec.NewMessage(codec.KindOneWay, 0, 0, payload([]byte("pushed"))))
			return
		}
		k := m.Keep() // answered after the handler returns, while the client waits
		time.AfterFunc(50*time.Millisecond, func() { echoKept(c, k) })
	}})
	pushes := make(chan string, 4)
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Handler: func(_ *codec.Conn, msg any) {
		if m := msg.(*codec.Message); m.Kind == codec.KindOneWay {
			pushes <- string(m.PayloadBytes())
		}
	}}, transport.ReceiveSync)
	conn := c.Conn()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			body := fmt.Sprint(i)
			r, err := conn.Request(context.Background(), request(body))
			if err != nil {
				t.Errorf("request %s: %v", body, err)
				return
			}
			if got := replyText(t, r, nil); got != body {
				t.Errorf("request %s got %s", body, got)
			}
		})
	}
	time.Sleep(20 * time.Millisecond) // the requests are out, one of them reading
	if err := conn.StartReceiving(); err != nil {
		t.Fatalf("StartReceiving: %v", err)
	}
	wg.Wait()
	if err := conn.StartReceiving(); err != nil {
		t.Fatalf("StartReceiving again: %v", err)
	}
	got := make(chan string, 1)
	if err := conn.RequestAsync(context.Background(), request("async"), func(r *codec.Message, err error) {
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(r.PayloadBytes())
	}); err != nil {
		t.Fatalf("RequestAsync after StartReceiving: %v", err)
	}
	if s := <-got; s != "async" {
		t.Fatalf("RequestAsync's reply: %q", s)
	}
	if err := conn.Write(codec.NewMessage(codec.KindOneWay, 0, 0, payload([]byte("push me")))); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-pushes:
		if s != "pushed" {
			t.Fatalf("push %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a push with no request waiting never reached the Handler")
	}
	srv.Transport().Range(func(s *transport.Session) bool { s.Close(); return true })
	select {
	case <-conn.Session().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the server's close went unnoticed")
	}
}

// StartReceiving on a connection that ended fails with its close error,
// and later requests fail as never sent.
func TestSyncClientStartReceivingAfterTheEnd(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveSync)
	c.Conn().Session().Close()
	if err := c.Conn().StartReceiving(); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("StartReceiving after the end: %v", err)
	}
	if _, err := c.Request(context.Background(), request("x")); !errors.Is(err, codec.ErrNotSent) {
		t.Fatalf("a request after: %v", err)
	}
}

// A sync client closed while its reader runs a read through the pipeline
// (here by the Handler on that reader, which a Close must not wait for)
// keeps the read buffer the borrowed message lies in until the reader is
// done: the message's bytes survive the Close and what the pool's next
// takers write, and the buffer goes back afterwards (leakcheck). The CI's
// race detector once caught a Close freeing that buffer under the reader.
func TestSyncClientCloseUnderItsReader(t *testing.T) {
	leakcheck.Check(t)
	body := strings.Repeat("p", 200)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		// A one-way message, never a reply: read by the request's reader,
		// which the client's Close then cuts short.
		c.Write(codec.NewMessage(codec.KindOneWay, codec.FlagString, 0, payload([]byte(body))))
	}})
	var client *codec.Client
	seen := make(chan string, 1)
	client = dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		before := string(m.PayloadBytes())
		if err := client.Close(); err != nil {
			t.Errorf("Close from the reader's Handler: %v", err)
		}
		for range 8 { // what a freed read buffer's next takers would write
			p := packet.Get(64 << 10)
			for i := range p.Bytes() {
				p.Bytes()[i] = 'X'
			}
			p.Release()
		}
		if after := string(m.PayloadBytes()); after != before {
			t.Errorf("the borrowed message changed under its Handler after Close: %.20q…", after)
		}
		seen <- before
	}}, transport.ReceiveSync)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Request(ctx, request("ask")); !errors.Is(err, codec.ErrConnClosed) {
		t.Fatalf("the request of a client closed while it waited: %v, want ErrConnClosed", err)
	}
	if got := <-seen; got != body {
		t.Fatalf("the push: %.20q…", got)
	}
	<-client.Conn().Session().Done()
}
