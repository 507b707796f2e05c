package baseline_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifenet/lifenet/internal/baseline"
)

// got is what one request's callback received.
type got struct {
	reply string
	err   error
	calls int
}

// callbacks makes a callback per request that records what it gets.
type callbacks struct {
	mu  sync.Mutex
	got map[string]*got
}

func (c *callbacks) cb(name string) baseline.Callback {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.got == nil {
		c.got = map[string]*got{}
	}
	g := &got{}
	c.got[name] = g
	return func(reply []byte, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		g.reply, g.err = string(reply), err
		g.calls++
	}
}

func newClient(t *testing.T, rw io.ReadWriter, f baseline.Format) *baseline.Client {
	t.Helper()
	c, err := baseline.NewClient(rw, f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Replies are matched by sequence number, not by order: the reply to the
// third request, then the first, reach their own callbacks; the second,
// unanswered when the stream ends, gets the end's error, as does Send
// from then on.
func TestClientMatchesBySequence(t *testing.T) {
	s := &script{chunks: [][]byte{
		srmpFrame(baseline.KindReply, 3, "ccc", false),
		srmpFrame(baseline.KindReply, 1, "a", true), // the 8-byte header
	}}
	c := newClient(t, s, baseline.SRMP)
	var cbs callbacks
	for _, p := range []string{"a", "bb", "ccc"} {
		if err := c.Send(1, []byte(p), cbs.cb(p)); err != nil {
			t.Fatal(err)
		}
	}
	if s.writes != 0 {
		t.Fatal("Send wrote before Flush")
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	wantOut := cat(srmpFrame(baseline.KindRequest, 1, "a", false), srmpFrame(baseline.KindRequest, 2, "bb", false), srmpFrame(baseline.KindRequest, 3, "ccc", false))
	if !bytes.Equal(s.out.Bytes(), wantOut) || s.writes != 1 {
		t.Fatalf("%d writes of % x, want one of % x", s.writes, s.out.Bytes(), wantOut)
	}
	if n := c.InFlight(); n != 3 {
		t.Fatalf("%d in flight, want 3", n)
	}
	if err := c.Receive(); err != io.EOF {
		t.Fatalf("Receive: %v, want io.EOF", err)
	}
	for name, want := range map[string]got{"a": {reply: "a", calls: 1}, "ccc": {reply: "ccc", calls: 1}, "bb": {err: io.EOF, calls: 1}} {
		if g := *cbs.got[name]; g != want {
			t.Errorf("request %q: callback got %+v, want %+v", name, g, want)
		}
	}
	if err := c.Send(1, []byte("late"), cbs.cb("late")); err != io.EOF {
		t.Errorf("Send after the end: %v, want io.EOF", err)
	}
}

// A reply whose sequence number has no request in flight is an error, in
// a serial Call and in Receive, where every request in flight gets it too.
func TestClientReplyWithWrongSequenceIsAnError(t *testing.T) {
	s := &script{chunks: [][]byte{srmpFrame(baseline.KindReply, 2, "x", false)}}
	c := newClient(t, s, baseline.SRMP)
	if reply, err := c.Call(1, []byte("x")); !errors.Is(err, baseline.ErrUnmatched) || reply != nil {
		t.Fatalf("Call answered with sequence 2 for 1: %q, %v; want ErrUnmatched", reply, err)
	}
	if _, err := c.Call(1, []byte("x")); !errors.Is(err, baseline.ErrUnmatched) {
		t.Errorf("Call after the bad reply: %v, want the same error", err)
	}

	s = &script{chunks: [][]byte{cat(srmpFrame(baseline.KindReply, 1, "a", false), srmpFrame(baseline.KindReply, 1, "a", false))}}
	c = newClient(t, s, baseline.SRMP)
	var cbs callbacks
	c.Send(1, []byte("a"), cbs.cb("a"))
	c.Send(1, []byte("b"), cbs.cb("b"))
	c.Flush()
	if err := c.Receive(); !errors.Is(err, baseline.ErrUnmatched) {
		t.Fatalf("a duplicate reply: Receive %v, want ErrUnmatched", err)
	}
	if g := *cbs.got["a"]; g.reply != "a" || g.err != nil || g.calls != 1 {
		t.Errorf("the answered request: %+v", g)
	}
	if g := *cbs.got["b"]; !errors.Is(g.err, baseline.ErrUnmatched) || g.calls != 1 {
		t.Errorf("the request in flight: %+v, want ErrUnmatched", g)
	}
}

// Length-field replies carry no number: each goes to the oldest request
// in flight, and a frame with none in flight is an error.
func TestClientLengthFieldMatchesByOrder(t *testing.T) {
	s := &script{chunks: [][]byte{lfFrame("first"), cat(lfFrame("second"), lfFrame("extra"))}}
	c := newClient(t, s, baseline.LengthField)
	var cbs callbacks
	c.Send(0, []byte("1"), cbs.cb("1"))
	c.Send(0, []byte("2"), cbs.cb("2"))
	c.Flush()
	if !bytes.Equal(s.out.Bytes(), cat(lfFrame("1"), lfFrame("2"))) {
		t.Fatalf("wrote % x", s.out.Bytes())
	}
	if err := c.Receive(); !errors.Is(err, baseline.ErrUnmatched) {
		t.Fatalf("a reply with nothing in flight: %v, want ErrUnmatched", err)
	}
	if g1, g2 := *cbs.got["1"], *cbs.got["2"]; g1.reply != "first" || g2.reply != "second" || g1.err != nil || g2.err != nil {
		t.Errorf("by order: %+v, %+v", g1, g2)
	}
	if err := c.Send(0, make([]byte, 0x10000), cbs.cb("big")); !errors.Is(err, baseline.ErrPayloadTooLarge) {
		t.Errorf("a 64 KiB length-field payload: %v", err)
	}
}

// A serial Call returns its reply, which may come in pieces; an error
// frame reaches the request with ErrErrorReply and its payload; a frame
// that is no reply ends the connection.
func TestClientCallAndBadFrames(t *testing.T) {
	reply := srmpFrame(baseline.KindReply, 1, "pong", false)
	s := &script{chunks: [][]byte{reply[:3], reply[3:], srmpFrame(baseline.KindError, 2, "boom", false), srmpFrame(baseline.KindRequest, 3, "?", false)}}
	c := newClient(t, s, baseline.SRMP)
	if r, err := c.Call(1, []byte("ping")); err != nil || string(r) != "pong" {
		t.Fatalf("Call: %q, %v", r, err)
	}
	if r, err := c.Call(1, []byte("ping")); !errors.Is(err, baseline.ErrErrorReply) || string(r) != "boom" {
		t.Fatalf("an error reply: %q, %v; want boom and ErrErrorReply", r, err)
	}
	if _, err := c.Call(1, []byte("ping")); !errors.Is(err, baseline.ErrNotReply) {
		t.Fatalf("a request from the server: %v, want ErrNotReply", err)
	}
	if _, err := baseline.NewClient(s, 0); !errors.Is(err, baseline.ErrFormat) {
		t.Errorf("format 0: %v", err)
	}
}

// SRMP has 256 numbers: 1…255, then 0; the 257th request in flight is
// refused.
func TestClientWindowFull(t *testing.T) {
	s := &script{}
	c := newClient(t, s, baseline.SRMP)
	nop := func([]byte, error) {}
	for i := range baseline.MaxInFlight {
		if err := c.Send(1, nil, nop); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if err := c.Send(1, nil, nop); !errors.Is(err, baseline.ErrWindowFull) {
		t.Fatalf("request 257: %v, want ErrWindowFull", err)
	}
	c.Flush()
	out := s.out.Bytes()
	for i := range baseline.MaxInFlight {
		if seq := out[i*4+1]; seq != byte(i+1) {
			t.Fatalf("request %d has sequence %d, want %d", i, seq, byte(i+1))
		}
	}
}

// Over TCP against the baseline's echo server: a window of 255 requests,
// each reply checked against its own request's payload, then serial
// calls; both formats.
func TestClientAgainstEchoServerTCP(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, f := range []baseline.Format{baseline.SRMP, baseline.LengthField} {
		t.Run(f.String(), func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := baseline.ServeFrames(l, f, baseline.Echo(f))
			defer srv.Close()
			conn, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second)) // a bound, not a timing: the test takes milliseconds
			c := newClient(t, conn, f)
			const total, window = 2000, 255
			free := make(chan struct{}, window)
			for range window {
				free <- struct{}{}
			}
			var mu sync.Mutex
			var bad []string
			answered := 0
			var rwg sync.WaitGroup
			rwg.Go(func() { c.Receive() })
			for i := range total {
				<-free
				p := fmt.Sprintf("request %d", i)
				err := c.Send(1, []byte(p), func(reply []byte, err error) {
					mu.Lock()
					if err != nil || string(reply) != p {
						bad = append(bad, fmt.Sprintf("%s: %q, %v", p, reply, err))
					}
					answered++
					mu.Unlock()
					free <- struct{}{}
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(free) == 0 || i == total-1 {
					if err := c.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			for range window {
				<-free
			}
			// Serial calls on a second client: Receive owns the first.
			conn2, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn2.Close()
			conn2.SetDeadline(time.Now().Add(20 * time.Second))
			c2 := newClient(t, conn2, f)
			for i := range 300 {
				p := fmt.Sprintf("call %d", i)
				if r, err := c2.Call(1, []byte(p)); err != nil || string(r) != p {
					t.Fatalf("%s: %q, %v", p, r, err)
				}
			}
			conn.Close()
			rwg.Wait()
			if answered != total || len(bad) > 0 {
				t.Fatalf("%d of %d answered; mismatched: %v", answered, total, bad)
			}
		})
	}
}
