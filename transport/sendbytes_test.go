package transport_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// funcHandler is a SessionHandler made of functions (either may be nil).
type funcHandler struct {
	receive func(s *transport.Session, p *packet.Packet)
	closed  func(s *transport.Session, e *transport.CloseError)
}

func (h funcHandler) Receive(s *transport.Session, p *packet.Packet) {
	if h.receive != nil {
		h.receive(s, p)
	}
}

func (h funcHandler) Closed(s *transport.Session, e *transport.CloseError) {
	if h.closed != nil {
		h.closed(s, e)
	}
}

// handle returns hooks whose every session runs h; BatchSends as given.
func handle(h funcHandler, batch bool) transport.Hooks {
	return transport.Hooks{
		NewHandler: func(*transport.Session) transport.SessionHandler { return h },
		BatchSends: batch,
	}
}

func bytesPacket(b []byte) *packet.Packet {
	p := packet.Get(len(b))
	copy(p.Bytes(), b)
	return p
}

func readN(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	if c, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// SendBytes sends its parts, in order, as one message: on a stream they
// arrive concatenated, and over UDP as one datagram; two parts (a header
// and a body, copied without a loop) as five.
func TestSendBytesPartsAreOneMessage(t *testing.T) {
	leakcheck.Check(t)
	parts := [][]byte{[]byte("ab"), nil, []byte("cd"), {}, []byte("ef")}
	two := [][]byte{[]byte("g"), []byte("hij")}
	for _, batch := range []bool{false, true} {
		reply := handle(funcHandler{receive: func(s *transport.Session, p *packet.Packet) {
			if err := s.SendBytes(); err != nil && !s.Datagram() { // nothing at all: no bytes on a stream
				t.Errorf("SendBytes(): %v", err)
			}
			if err := s.SendBytes(parts...); err != nil {
				t.Errorf("SendBytes(parts...): %v", err)
			}
			if err := s.SendBytes(two...); err != nil {
				t.Errorf("SendBytes(two...): %v", err)
			}
		}}, batch)
		_, a := startServer(t, transport.Config{}, reply, "tcp", "127.0.0.1:0")
		c := dial(t, "tcp", a)
		c.Write([]byte("go"))
		if got := readN(t, c, 10); string(got) != "abcdefghij" {
			t.Fatalf("BatchSends=%v: stream got %q", batch, got)
		}
		c.Write([]byte("again"))
		if got := readN(t, c, 10); string(got) != "abcdefghij" {
			t.Fatalf("BatchSends=%v: stream got %q the second time", batch, got)
		}

		reply = handle(funcHandler{receive: func(s *transport.Session, p *packet.Packet) {
			if err := s.SendBytes(parts...); err != nil {
				t.Errorf("SendBytes(parts...): %v", err)
			}
			if err := s.SendBytes(two...); err != nil {
				t.Errorf("SendBytes(two...): %v", err)
			}
		}}, batch)
		_, ua := startServer(t, transport.Config{}, reply, "udp", "127.0.0.1:0")
		uc := dialClient(t, "udp", ua, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
		uc.SendBytes([]byte("go"))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		p, err := uc.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Bytes()) != "abcdef" || p.Next() != nil {
			t.Fatalf("BatchSends=%v: datagram %q in %d segments", batch, p.Bytes(), p.NumSegments())
		}
		p.Release()
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		p, err = uc.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Bytes()) != "ghij" || p.Next() != nil {
			t.Fatalf("BatchSends=%v: second datagram %q in %d segments", batch, p.Bytes(), p.NumSegments())
		}
		p.Release()
	}
}

// Replies made from a corked handler (BatchSends) leave in the order they
// were made, whole, whether they are small SendBytes messages (staged
// together), packets, chains, borrowed views or large messages, also when
// they overrun the cork limit and are written while the handler runs.
func TestSendBytesCorkedKeepsOrderWithSend(t *testing.T) {
	leakcheck.Check(t)
	expected := make(chan []byte, 1)
	_, a := startServer(t, transport.Config{}, handle(funcHandler{receive: func(s *transport.Session, p *packet.Packet) {
		var want bytes.Buffer
		sendBytes := func(parts ...[]byte) {
			for _, b := range parts {
				want.Write(b)
			}
			if err := s.SendBytes(parts...); err != nil {
				t.Errorf("SendBytes: %v", err)
			}
		}
		send := func(q *packet.Packet) {
			want.Write(q.AppendTo(nil))
			if err := s.Send(q); err != nil {
				t.Errorf("Send: %v", err)
			}
		}
		// The plain case: SendBytes, Send, SendBytes.
		sendBytes([]byte("A"))
		send(bytesPacket([]byte("B")))
		sendBytes([]byte("C"))

		scratch := packet.Get(256)
		var loan packet.Loan
		large := bytes.Repeat([]byte("L"), 70<<10) // past the staging size and the cork limit
		for i := range 3000 {
			var hdr [8]byte
			binary.LittleEndian.PutUint32(hdr[:], uint32(i))
			body := bytes.Repeat([]byte{byte(i)}, i%40)
			binary.LittleEndian.PutUint32(hdr[4:], uint32(len(body)))
			switch {
			case i%500 == 250:
				sendBytes(hdr[:], large)
			case i%7 == 0:
				send(bytesPacket(hdr[:]).Chain(bytesPacket(body)))
			case i%11 == 0:
				copy(scratch.Bytes(), hdr[:])
				copy(scratch.Bytes()[8:], body)
				send(loan.Lend(scratch, 0, 8+len(body)))
				loan.End()
				if scratch.RefCount() != 1 {
					t.Errorf("a short borrowed view was shared, not copied")
				}
				clear(scratch.Bytes()) // the lender reuses its buffer at once
			case i%13 == 0:
				send(bytesPacket(append(hdr[:], body...)))
			default:
				sendBytes(hdr[:4], hdr[4:], body)
			}
		}
		scratch.Release()
		sendBytes([]byte("end"))
		expected <- want.Bytes()
	}}, true), "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.Write([]byte("go"))
	var want []byte
	select {
	case want = <-expected:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not finish")
	}
	got := readN(t, c, len(want))
	if !bytes.HasPrefix(got, []byte("ABC")) {
		t.Fatalf("SendBytes, Send, SendBytes arrived as %q", got[:3])
	}
	if i := firstDifference(got, want); i >= 0 {
		t.Fatalf("stream differs from what was sent at byte %d of %d", i, len(want))
	}
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// Concurrent senders mixing SendBytes (several parts) and Send each see
// their messages arrive whole and in their order.
func TestSendBytesConcurrentWithSend(t *testing.T) {
	leakcheck.Check(t)
	opened := make(chan *transport.Session, 1)
	_, a := startServer(t, transport.Config{}, transport.Hooks{OnOpen: func(s *transport.Session) { opened <- s }}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	sess := <-opened

	const senders, each = 4, 800
	size := func(g, i int) int { return (g*31 + i*17) % 700 } // around the small-segment size
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				n := size(g, i)
				var hdr [12]byte
				binary.LittleEndian.PutUint32(hdr[:], uint32(n))
				binary.LittleEndian.PutUint32(hdr[4:], uint32(g))
				binary.LittleEndian.PutUint32(hdr[8:], uint32(i))
				body := make([]byte, n)
				for k := range body {
					body[k] = byte(g + i + k)
				}
				var err error
				if i%3 == 0 {
					err = sess.Send(bytesPacket(hdr[:]).Chain(bytesPacket(body)))
				} else {
					err = sess.SendBytes(hdr[:6], hdr[6:], body)
				}
				if err != nil {
					t.Errorf("send: %v", err)
					return
				}
			}
		})
	}
	next := make([]int, senders)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for range senders * each {
		hdr := readN(t, c, 12)
		n, g, i := int(binary.LittleEndian.Uint32(hdr)), int(binary.LittleEndian.Uint32(hdr[4:])), int(binary.LittleEndian.Uint32(hdr[8:]))
		if g >= senders || i != next[g] || n != size(g, i) {
			t.Fatalf("got sender %d message %d (%d bytes); want message %d", g, i, n, next[g])
		}
		for k, b := range readN(t, c, n) {
			if b != byte(g+i+k) {
				t.Fatalf("sender %d message %d: byte %d corrupt", g, i, k)
			}
		}
		next[g]++
	}
	wg.Wait()
}

// Over UDP every SendBytes is a datagram of its own, also when a corked
// handler makes several in a row: from a server's peer session to its
// client, and from a client to the server.
func TestSendBytesDatagramPerMessage(t *testing.T) {
	leakcheck.Check(t)
	serverGot := make(chan string, 16)
	_, a := startServer(t, transport.Config{}, handle(funcHandler{receive: func(s *transport.Session, p *packet.Packet) {
		serverGot <- string(p.Bytes())
		if string(p.Bytes()) == "hello" {
			s.SendBytes([]byte("one"))
			s.SendBytes([]byte("tw"), []byte("o"))
			s.Send(bytesPacket([]byte("three")))
			s.SendBytes([]byte("four"))
			s.SendBytes([]byte("go"))
		}
	}}, true), "udp", "127.0.0.1:0")

	clientGot := make(chan string, 16)
	c := dialClient(t, "udp", a, transport.ClientConfig{}, transport.Hooks{
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			clientGot <- string(p.Bytes())
			if string(p.Bytes()) == "go" { // corked: these are queued together
				s.SendBytes([]byte("a"))
				s.SendBytes([]byte("b"), []byte("b"))
				s.SendBytes([]byte("ccc"))
			}
		},
		BatchSends: true,
	})
	if !c.Session().Datagram() {
		t.Fatal("UDP client session is not a datagram session")
	}
	c.SendBytes([]byte("hello"))
	for _, want := range []string{"one", "two", "three", "four", "go"} {
		if got := testwait.Recv(t, clientGot, 5*time.Second, "a datagram"); got != want {
			t.Fatalf("client got datagram %q, want %q", got, want)
		}
	}
	for _, want := range []string{"hello", "a", "bb", "ccc"} {
		if got := testwait.Recv(t, serverGot, 5*time.Second, "a datagram"); got != want {
			t.Fatalf("server got datagram %q, want %q", got, want)
		}
	}
	c.SendBytes([]byte("x"))
	c.Session().SendBytes([]byte("y"), []byte("z"))
	for _, want := range []string{"x", "yz"} {
		if got := testwait.Recv(t, serverGot, 5*time.Second, "a datagram"); got != want {
			t.Fatalf("server got datagram %q, want %q", got, want)
		}
	}
}

// SendBytes on a closed session fails with an error matching ErrClosed,
// on a server's session and on a client, stream and datagram alike.
func TestSendBytesAfterClose(t *testing.T) {
	leakcheck.Check(t)
	for _, network := range []string{"tcp", "udp"} {
		t.Run(network, func(t *testing.T) {
			opened := make(chan *transport.Session, 1)
			_, a := startServer(t, transport.Config{}, transport.Hooks{
				OnOpen:    func(s *transport.Session) { opened <- s },
				OnReceive: func(s *transport.Session, p *packet.Packet) {},
			}, network, "127.0.0.1:0")
			c, err := transport.Dial(context.Background(), network, a.String(), transport.ClientConfig{}, transport.Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			c.SendBytes([]byte("hi")) // a UDP peer's session starts with its first datagram
			sess := <-opened
			c.Close()
			<-sess.Done() // the peer closed (EOF, or the empty datagram)
			for _, send := range []func() error{
				func() error { return sess.SendBytes([]byte("x")) },
				func() error { return sess.SendBytes([]byte("x"), []byte("y")) },
				func() error { return sess.Send(bytesPacket([]byte("x"))) },
				func() error { return c.SendBytes([]byte("x")) },
				func() error { return c.Session().SendBytes([]byte("x"), []byte("y")) },
			} {
				if err := send(); !errors.Is(err, transport.ErrClosed) {
					t.Fatalf("send after close = %v, want ErrClosed", err)
				}
			}
		})
	}
}

// Sends that do not fit in the queue's room (SendQueueBytes) wait for it
// instead of failing: eight corked sends of 1000 bytes with 4096 bytes of
// room all succeed (the one that does not fit writes the queue itself, as
// nothing else will while OnReceive runs), the peer gets every byte in
// order, and nothing counts as a slow consumer. The queue used to close
// the session at the fifth send, a burst limit rather than a test of the
// peer.
func TestSendBytesPastTheQueueWaitsForRoom(t *testing.T) {
	leakcheck.Check(t)
	errs := make(chan []error, 1)
	srv, a := startServer(t, transport.Config{SendQueueBytes: 4096}, handle(funcHandler{
		receive: func(s *transport.Session, p *packet.Packet) {
			var got []error
			for i := range 8 { // corked: nothing is written while this runs, unless a send must make room
				got = append(got, s.SendBytes(bytes.Repeat([]byte{byte(i)}, 600), bytes.Repeat([]byte{byte(i)}, 400)))
			}
			errs <- got
		},
	}, true), "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.Write([]byte("go"))
	for i, err := range <-errs {
		if err != nil {
			t.Errorf("send %d (%d bytes before it): %v", i, 1000*i, err)
		}
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 8000)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("the peer got %v", err)
	}
	for i, b := range got {
		if b != byte(i/1000) {
			t.Fatalf("byte %d is %d, want %d: sends out of order", i, b, i/1000)
		}
	}
	if st := srv.Stats(); st.SendQueueOverflows != 0 || st.Closed[transport.ReasonSlowConsumer] != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Send keeps a borrowed view (a Loan) before queueing it: a short one is
// copied, so the lender may overwrite its buffer at once; a long one is
// shared, which the lender sees in RefCount. Either way the original bytes
// are sent.
func TestSendBorrowedView(t *testing.T) {
	leakcheck.Check(t)
	short := []byte("original short message")
	long := bytes.Repeat([]byte("0123456789abcdef"), packet.KeepCopyBelow/16+1)
	refs := make(chan int, 3)
	_, a := startServer(t, transport.Config{}, handle(funcHandler{receive: func(s *transport.Session, p *packet.Packet) {
		// Echo the read through a view of the receive buffer itself.
		var loan packet.Loan
		if err := s.Send(loan.Lend(p, 0, p.Len())); err != nil {
			t.Errorf("Send of a view of the receive buffer: %v", err)
		}
		loan.End()
		for _, msg := range [][]byte{short, long} {
			buf := packet.Get(len(msg) + 10)
			copy(buf.Bytes()[10:], msg)
			if err := s.Send(loan.Lend(buf, 10, len(msg))); err != nil {
				t.Errorf("Send of a borrowed view: %v", err)
			}
			loan.End()
			refs <- buf.RefCount()
			if buf.RefCount() == 1 { // as a receive loop does: reuse the buffer unless shared
				for i := range buf.Bytes() {
					buf.Bytes()[i] = 'X'
				}
			}
			buf.Release()
		}
	}}, true), "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.Write([]byte("ping"))
	want := append(append([]byte("ping"), short...), long...)
	if got := readN(t, c, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("got %q, want the original bytes", got)
	}
	if r := <-refs; r != 1 {
		t.Fatalf("a %d-byte view was shared (lender refs %d), want copied", len(short), r)
	}
	if r := <-refs; r != 2 {
		t.Fatalf("a %d-byte view left the lender %d refs, want 2 (shared)", len(long), r)
	}
}

// A client keeps the staging buffer of its last SendBytes for the next
// one. Rounds of SendBytes alternating with Sends of packets wrapping the
// caller's memory arrive whole and in order, and the caller's memory is
// never taken for a staging buffer (the pool recycles packet handles, so
// a handle once the kept buffer's may come back as a wrapped one).
func TestClientSendBytesReusesItsStagingBuffer(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
	mine := bytes.Repeat([]byte{'w'}, 40)
	for i := range 300 {
		small := []byte{byte(i), byte(i >> 8), 's', 'b'}
		var want []byte
		if err := c.SendBytes(small); err != nil {
			t.Fatal(err)
		}
		want = append(want, small...)
		if i%3 == 0 {
			if err := c.Send(packet.Wrap(mine)); err != nil {
				t.Fatal(err)
			}
			want = append(want, mine...)
		}
		if got := receiveString(t, c, len(want)); got != string(want) {
			t.Fatalf("round %d: % x, want % x", i, got, want)
		}
		if !bytes.Equal(mine, bytes.Repeat([]byte{'w'}, 40)) {
			t.Fatalf("round %d: the caller's wrapped memory was written: %q", i, mine)
		}
	}
}

// A client's lone small SendBytes is written at once, past the queue
// (writeDirect): from goroutines racing each other and queueing behind
// one another's writes, every message arrives whole, each goroutine's in
// its order, all counted; and one written so after the peer reset the
// connection fails as not written.
func TestClientLoneSendsGoOutWholeAndCounted(t *testing.T) {
	leakcheck.Check(t)
	c, peer := dialPlainPeer(t)
	const senders, each, size = 8, 200, 8
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				msg := fmt.Appendf(nil, "%d%06d;", g, i)
				if err := c.SendBytes(msg[:1], msg[1:]); err != nil {
					t.Errorf("sender %d, message %d: %v", g, i, err)
					return
				}
			}
		})
	}
	got := make([]byte, senders*each*size)
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(peer, got); err != nil {
		t.Fatalf("the peer read: %v", err)
	}
	wg.Wait()
	next := make([]int, senders)
	for m := range bytes.SplitSeq(got[:len(got)-1], []byte{';'}) {
		var g, i int
		if _, err := fmt.Sscanf(string(m), "%1d%06d", &g, &i); err != nil || len(m) != size-1 || i != next[g] {
			t.Fatalf("message %q: sender %d's next is %d (%v)", m, g, next[g], err)
		}
		next[g]++
	}
	if st := c.Stats(); st.MessagesOut != senders*each || st.BytesOut != uint64(len(got)) {
		t.Fatalf("counted %d messages, %d bytes; sent %d, %d", st.MessagesOut, st.BytesOut, senders*each, len(got))
	}

	resetThenSendIsNotWritten(t, c, peer)
}

// A lone send written at once that blocks (the peer does not read) holds
// the write turn: a send made meanwhile is queued behind it, and goes out
// as soon as the blocked write is done, with nothing sent after it.
func TestClientLoneSendFlushesWhatQueuedBehindIt(t *testing.T) {
	leakcheck.Check(t)
	addr, accepted := plainPeer(t)
	cfg := transport.ClientConfig{}
	cfg.SocketSendBuffer = 4096
	c, err := transport.Dial(context.Background(), "tcp", addr, cfg, transport.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	peer := <-accepted
	t.Cleanup(func() { peer.Close() })
	peer.(*net.TCPConn).SetReadBuffer(4096)

	msg := bytes.Repeat([]byte{'.'}, 500)
	var stop atomic.Bool
	filled := make(chan struct{})
	go func() { // small sends until the socket is full and one blocks
		defer close(filled)
		for !stop.Load() {
			if c.SendBytes(msg) != nil {
				return
			}
		}
	}()
	for last := uint64(0); ; { // the filler's write has stopped returning
		time.Sleep(50 * time.Millisecond)
		out := c.Stats().BytesOut
		if out == last {
			break
		}
		last = out
	}
	if err := c.SendBytes([]byte("marker")); err != nil { // queued behind the blocked write
		t.Fatal(err)
	}
	stop.Store(true)
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	var tail []byte
	buf := make([]byte, 64<<10)
	for !bytes.HasSuffix(tail, []byte("marker")) {
		n, err := peer.Read(buf)
		if err != nil {
			t.Fatalf("the send queued behind a blocked write never came: %v", err)
		}
		tail = append(tail[max(0, len(tail)-16):], buf[:n]...)
	}
	<-filled
}
