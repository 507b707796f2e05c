package codec_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// lfFrame is a frame of the default length field: a 2-byte little-endian
// length, then b.
func lfFrame(b []byte) []byte { return append(lfField(codec.LengthField{}, uint64(len(b))), b...) }

// readLF reads one length-field frame's payload from r.
func readLF(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	f, err := readFrame(r, false)
	if err != nil {
		t.Fatal(err)
	}
	return f[2:]
}

// onAnother runs f on a new goroutine and waits for it: the handler's
// call waits, as a handler that hands work off and waits for it does.
func onAnother(f func()) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	<-done
}

// A write from another goroutine that the handler waits for, made after
// the handler wrote back its lent frame, leaves after that reply; one made
// before it leaves before it. The reply to the lent view is buffered
// without a lock, so the other write must not overtake it.
func TestWritesAroundALentReplyKeepTheirOrder(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: func(c *codec.Conn, msg any) {
		v := msg.(*packet.Packet)
		if string(v.Bytes()) == "before" {
			onAnother(func() { c.Write(payload([]byte("pushed first"))) })
			c.Write(v)
			return
		}
		c.Write(v) // the lent view: the lock-free reply
		onAnother(func() { c.Write(payload([]byte("pushed after"))) })
		onAnother(func() { c.Write(payload(bytes.Repeat([]byte{'L'}, 2000))) }) // not small: a packet behind the reply
	}})
	conn := dialRaw(t, addr, append(lfFrame([]byte("after")), lfFrame([]byte("before"))...))
	r := bufioReader(conn)
	for _, want := range []string{"after", "pushed after", string(bytes.Repeat([]byte{'L'}, 2000)), "pushed first", "before"} {
		if got := readLF(t, r); string(got) != want {
			t.Fatalf("got %.20q, want %.20q", got, want)
		}
	}
}

// The same for SRMP: a reply to the lent request, then a push from
// another goroutine and an Enqueue from the handler: the reply first.
func TestSRMPWritesAfterALentReplyLeaveBehindIt(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		c.Reply(m, m.Payload)
		onAnother(func() {
			c.Write(codec.NewMessage(codec.KindRequest, codec.FlagString, 9, payload([]byte("push"))))
		})
		c.Enqueue(codec.NewMessage(codec.KindRequest, codec.FlagString, 10, payload([]byte("enqueued"))))
	}})
	conn := dialRaw(t, addr, encodeSRMP(t, codec.KindRequest, codec.FlagString, 7, []byte("call")))
	r := bufioReader(conn)
	for _, want := range []struct {
		kind codec.Kind
		seq  uint8
		body string
	}{{codec.KindReply, 7, "call"}, {codec.KindRequest, 9, "push"}, {codec.KindRequest, 10, "enqueued"}} {
		m, err := readSRMP(r)
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind != want.kind || m.Seq != want.seq || string(m.PayloadBytes()) != want.body {
			t.Fatalf("got kind %d seq %d %q, want kind %d seq %d %q", m.Kind, m.Seq, m.PayloadBytes(), want.kind, want.seq, want.body)
		}
		m.Release()
	}
}

// Close in a handler after a lent reply closes the connection once the
// reply has left.
func TestCloseAfterALentReplySendsTheReplyFirst(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: func(c *codec.Conn, msg any) {
		c.Write(msg)
		c.Close()
	}})
	conn := dialRaw(t, addr, lfFrame([]byte("bye")))
	r := bufioReader(conn)
	if got := readLF(t, r); string(got) != "bye" {
		t.Fatalf("got %q, want the reply before the close", got)
	}
	if n, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the reply: %d bytes, %v; want EOF", n, err)
	}
}

// A handler that has not replied to its lent frame (and whose read has
// no reply of an earlier frame buffered) writes as outside a read: far
// more than the backlog, each large write waiting for room.
func TestWritesWithoutALentReplyAreNotBounded(t *testing.T) {
	leakcheck.Check(t)
	const chunk, count = 60000, 150 // 9 MiB
	errs := make(chan error, 1)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: func(c *codec.Conn, msg any) {
		var err error
		for i := 0; i < count && err == nil; i++ {
			err = c.Write(payload(bytes.Repeat([]byte{byte(i)}, chunk)))
		}
		errs <- err
	}})
	conn := dialRaw(t, addr, lfFrame([]byte("go")))
	r := bufioReader(conn)
	for i := range count {
		if got := readLF(t, r); len(got) != chunk || got[0] != byte(i) {
			t.Fatalf("write %d: %d bytes of %d", i, len(got), got[0])
		}
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// Without a lent reply, a small Write is batched with the read's other
// replies while a large one and an Enqueue go at once: the batched write
// still leaves first.
func TestBatchedWritesLeaveBeforeLaterDirectOnes(t *testing.T) {
	leakcheck.Check(t)
	large := bytes.Repeat([]byte{'L'}, 3000)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: func(c *codec.Conn, msg any) {
		c.Write(payload([]byte("small")))
		c.Write(payload(large))
		c.Enqueue(payload([]byte("enqueued")))
	}})
	conn := dialRaw(t, addr, lfFrame([]byte("go")))
	r := bufioReader(conn)
	for _, want := range []string{"small", string(large), "enqueued"} {
		if got := readLF(t, r); string(got) != want {
			t.Fatalf("got %.20q, want %.20q", got, want)
		}
	}
}

// A write or a request made behind a buffered reply on a session that has
// closed is refused as it would be outside a read: the write gets the
// session's error, the request ErrNotSent, where the later queue took
// both and dropped them unreported.
func TestWritesBehindALentReplyOnAClosedSessionFail(t *testing.T) {
	leakcheck.Check(t)
	type outcome struct{ before, write, request error }
	got := make(chan outcome, 1)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		m := msg.(*codec.Message)
		c.Session().Close()
		var o outcome
		o.before = c.Write(codec.NewMessage(codec.KindRequest, codec.FlagString, 9, payload([]byte("x"))))
		c.Reply(m, m.Payload) // lent: buffered
		o.write = c.Write(codec.NewMessage(codec.KindRequest, codec.FlagString, 9, payload([]byte("x"))))
		o.request = c.RequestBytesAsync(context.Background(), codec.FlagString, []byte("y"), func(*codec.Message, error) {})
		got <- o
	}})
	dialRaw(t, addr, encodeSRMP(t, codec.KindRequest, codec.FlagString, 1, []byte("a")))
	o := <-got
	if o.before == nil || o.write == nil || o.write.Error() != o.before.Error() {
		t.Errorf("a write on the closed session: %v before the lent reply, %v after; want the same error", o.before, o.write)
	}
	if !errors.Is(o.request, codec.ErrNotSent) {
		t.Errorf("a request on the closed session behind the lent reply: %v, want ErrNotSent", o.request)
	}
}

// dialRaw connects to addr and writes b.
func dialRaw(t *testing.T, addr string, b []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	return c
}
