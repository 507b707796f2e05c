package transport_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// readReplies reads want from c, in that order.
func readReplies(t *testing.T, c *net.UDPConn, want ...string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 256)
	for _, w := range want {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("%s waiting for %q: %v", c.LocalAddr(), w, err)
		}
		if string(buf[:n]) != w {
			t.Fatalf("%s got %q, want %q", c.LocalAddr(), buf[:n], w)
		}
	}
}

// A reply that cannot be sent (larger than any datagram: EMSGSIZE) costs
// its own peer the rest of its replies and its session (ReasonError), not
// the other peers of the batch theirs: peer A's first reply leaves, its
// second fails, its third is not sent; B before it and C after it get
// their replies. Both read paths; in batches on Linux the kernel sends
// B's reply and A's first, then fails on A's second.
func TestUDPReplyFailureSparesOtherPeers(t *testing.T) {
	leakcheck.Check(t)
	for _, m := range readModes {
		t.Run(m.name, func(t *testing.T) {
			rec := newRecorder()
			rec.onRecv = func(s *transport.Session, p *packet.Packet) {
				if string(p.Bytes()) != "big" {
					s.SendBytes([]byte("re:"), p.Bytes())
					return
				}
				s.SendBytes([]byte("a-before"))
				s.SendBytes(bytes.Repeat([]byte("x"), transport.MaxDatagram+1))
				s.SendBytes([]byte("a-after"))
			}
			hooks := rec.hooks()
			hooks.BatchSends = true
			var a, b, c *net.UDPConn
			srv := serveQueued(t, transport.Config{UDPReadBatch: m.batch}, hooks, "udp4", "127.0.0.1:0", 0, func(to *net.UDPAddr) {
				a, b, c = udpPeer(t, "udp4", to), udpPeer(t, "udp4", to), udpPeer(t, "udp4", to)
				send(t, b, []byte("b"))
				send(t, a, []byte("big"))
				send(t, c, []byte("c"))
			})
			readReplies(t, b, "re:b")
			readReplies(t, c, "re:c")
			readReplies(t, a, "a-before")
			// A's replies went before C's, which has its own: no more is coming.
			a.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if n, err := a.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("A read %d more bytes (%v), want nothing", n, err)
			}
			waitUntil(t, "A's session to end", func() bool {
				_, _, closed := rec.snapshot()
				return len(closed) == 1
			})
			got, _, closed := rec.snapshot()
			if r := closed[got[1].id]; r != transport.ReasonError {
				t.Errorf("A's session ended with %v, want %v", r, transport.ReasonError)
			}
			if st := srv.Stats(); st.MessagesOut != 2 || st.BytesOut != 4+4+8 || st.Active != 2 {
				t.Errorf("Stats: %d messages, %d bytes out, %d sessions; want 2, 16, 2", st.MessagesOut, st.BytesOut, st.Active)
			}
		})
	}
}

// A peer's datagrams never overtake each other when a goroutine other
// than the handler sends to it too: while the handler runs (its sends
// held back, BatchSends), between its return and the batch's send, and
// while that goroutine writes itself. Every send to the peer takes the
// next number in call order; the peer must receive 0, 1, 2, … with no
// gap. A helper goroutine sends two numbers before each reply, the
// handler waiting for it (a backlog from another goroutine queued ahead
// of the reply), and a pusher goroutine sends on its own throughout
// (kept within 64 datagrams of what the peer has read, so loopback loses
// none).
func TestUDPReplyOrderWithOtherSenders(t *testing.T) {
	leakcheck.Check(t)
	for _, m := range readModes {
		t.Run(m.name, func(t *testing.T) {
			const requests, pushes = 40, 300
			var (
				mu     sync.Mutex // orders the sends: number n is the nth Send call
				next   int
				read   atomic.Int64 // datagrams the peer has read
				pusher = make(chan struct{})
			)
			sendNext := func(s *transport.Session, kind string) {
				mu.Lock()
				defer mu.Unlock()
				s.SendBytes([]byte(kind + " " + strconv.Itoa(next)))
				next++
			}
			push := func(s *transport.Session) {
				defer close(pusher)
				deadline := time.Now().Add(30 * time.Second)
				for i := 0; i < pushes && s.Reason() == transport.ReasonNone && time.Now().Before(deadline); {
					mu.Lock()
					ahead := int64(next) - read.Load()
					mu.Unlock()
					if ahead > 64 {
						time.Sleep(100 * time.Microsecond)
						continue
					}
					sendNext(s, "push")
					i++
				}
			}
			hooks := transport.Hooks{
				BatchSends: true,
				OnOpen:     func(s *transport.Session) { go push(s) },
				OnReceive: func(s *transport.Session, p *packet.Packet) {
					done := make(chan struct{})
					go func() {
						sendNext(s, "helper")
						sendNext(s, "helper")
						close(done)
					}()
					<-done
					sendNext(s, "reply")
				},
			}
			_, a := startServer(t, transport.Config{UDPReadBatch: m.batch}, hooks, "udp4", "127.0.0.1:0")
			c := udpPeer(t, "udp4", a.(*net.UDPAddr))
			c.SetReadBuffer(1 << 20)
			total := requests*3 + pushes
			buf := make([]byte, 64)
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			send(t, c, []byte("req")) // one request in flight: the next goes when its reply is read
			sent, replies := 1, 0
			for want := 0; want < total; want++ {
				n, err := c.Read(buf)
				if err != nil {
					t.Fatalf("waiting for number %d of %d: %v", want, total, err)
				}
				kind, num, _ := strings.Cut(string(buf[:n]), " ")
				if got, _ := strconv.Atoi(num); got != want {
					t.Fatalf("got %s %d, want number %d: out of order or lost", kind, got, want)
				}
				read.Add(1)
				if kind == "reply" {
					if replies++; sent < requests {
						send(t, c, []byte("req"))
						sent++
					}
				}
			}
			<-pusher
			t.Logf("%d datagrams in order, %d of them replies", total, replies)
			if replies != requests {
				t.Errorf("%d replies, want %d", replies, requests)
			}
		})
	}
}
