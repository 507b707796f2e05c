package transport_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// readModes are the two receive paths of a UDP server: batches (recvmmsg
// on Linux; elsewhere the portable loop all the same) and one datagram
// per read, which UDPReadBatch 1 forces on every OS.
var readModes = []struct {
	name  string
	batch int
}{{"batch", transport.DefaultUDPReadBatch}, {"single", 1}}

// readsFor is how many receive calls n datagrams waiting at once take.
func readsFor(n, batch int) uint64 {
	if runtime.GOOS != "linux" {
		batch = 1
	}
	return uint64((n + batch - 1) / batch)
}

// received is one datagram as a handler saw it.
type received struct {
	id     uint64
	remote string
	data   string
}

// recorder collects what a server's handlers see.
type recorder struct {
	mu     sync.Mutex
	got    []received
	opened []uint64
	closed map[uint64]transport.Reason
	onRecv func(s *transport.Session, p *packet.Packet) // runs after recording, if set
}

func newRecorder() *recorder { return &recorder{closed: make(map[uint64]transport.Reason)} }

func (r *recorder) hooks() transport.Hooks {
	return transport.Hooks{
		OnOpen: func(s *transport.Session) {
			r.mu.Lock()
			r.opened = append(r.opened, s.ID())
			r.mu.Unlock()
		},
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			r.mu.Lock()
			r.got = append(r.got, received{s.ID(), s.RemoteAddr().String(), string(p.Bytes())})
			r.mu.Unlock()
			if r.onRecv != nil {
				r.onRecv(s, p)
			}
		},
		OnClose: func(s *transport.Session, err *transport.CloseError) {
			r.mu.Lock()
			r.closed[s.ID()] = err.Reason
			r.mu.Unlock()
		},
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *recorder) snapshot() ([]received, []uint64, map[uint64]transport.Reason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	closed := make(map[uint64]transport.Reason, len(r.closed))
	for k, v := range r.closed {
		closed[k] = v
	}
	return append([]received(nil), r.got...), append([]uint64(nil), r.opened...), closed
}

// serveQueued opens a UDP socket on addr, lets queue send datagrams to it
// before anything reads it, then serves it with a new server: the first
// receive finds them all waiting (loopback delivers a datagram before
// its send returns). slot, if not 0, is the size of the receive buffers.
func serveQueued(t *testing.T, cfg transport.Config, hooks transport.Hooks, network, addr string, slot int, queue func(to *net.UDPAddr)) *transport.Server {
	t.Helper()
	ua, err := net.ResolveUDPAddr(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenUDP(network, ua)
	if err != nil {
		t.Skipf("no %s loopback: %v", network, err)
	}
	pc.SetReadBuffer(1 << 20)
	srv, err := transport.NewServer(cfg, hooks)
	if err != nil {
		pc.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if slot > 0 {
		transport.SetDatagramBuffer(srv, slot)
	}
	queue(pc.LocalAddr().(*net.UDPAddr))
	if err := srv.ServePacket(pc); err != nil {
		pc.Close()
		t.Fatal(err)
	}
	return srv
}

// udpPeer is a plain connected UDP socket, closed when the test ends.
func udpPeer(t *testing.T, network string, to *net.UDPAddr) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP(network, nil, to)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c *net.UDPConn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// Datagrams waiting when the server starts are read in batches of
// UDPReadBatch: exactly a batch takes one receive call, a batch and one
// more take two; one datagram per read takes one call each. Each
// datagram arrives whole and in order either way.
func TestUDPBatchBoundaries(t *testing.T) {
	leakcheck.Check(t)
	for _, m := range readModes {
		for _, n := range []int{transport.DefaultUDPReadBatch, transport.DefaultUDPReadBatch + 1} {
			t.Run(fmt.Sprintf("%s/n=%d", m.name, n), func(t *testing.T) {
				rec := newRecorder()
				srv := serveQueued(t, transport.Config{UDPReadBatch: m.batch}, rec.hooks(), "udp4", "127.0.0.1:0", 0, func(to *net.UDPAddr) {
					c := udpPeer(t, "udp4", to)
					for i := range n {
						send(t, c, []byte(fmt.Sprintf("datagram %d", i)))
					}
				})
				waitUntil(t, fmt.Sprintf("%d datagrams", n), func() bool { return rec.count() == n })
				got, opened, _ := rec.snapshot()
				for i, d := range got {
					if want := fmt.Sprintf("datagram %d", i); d.data != want {
						t.Fatalf("datagram %d = %q, want %q", i, d.data, want)
					}
				}
				if len(opened) != 1 {
					t.Errorf("%d sessions opened for one peer", len(opened))
				}
				if reads, want := transport.UDPReads(srv), readsFor(n, m.batch); reads != want {
					t.Errorf("%d datagrams took %d receive calls, want %d", n, reads, want)
				}
				if st := srv.Stats(); st.MessagesIn != uint64(n) || st.DatagramsDropped != 0 {
					t.Errorf("Stats: %d messages in, %d dropped; want %d, 0", st.MessagesIn, st.DatagramsDropped, n)
				}
			})
		}
	}
}

// One batch holds datagrams of many peers, interleaved: each peer gets a
// session of its own, addressed to it, and the replies reach the right
// peer. Run over IPv4 and IPv6 loopback.
func TestUDPBatchManyPeers(t *testing.T) {
	leakcheck.Check(t)
	for _, m := range readModes {
		for _, fam := range []struct{ network, addr string }{{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}} {
			t.Run(m.name+"/"+fam.network, func(t *testing.T) {
				const peers, rounds = 20, 2 // 40 datagrams: more than a batch
				rec := newRecorder()
				rec.onRecv = func(s *transport.Session, p *packet.Packet) {
					s.SendBytes([]byte("to "+s.RemoteAddr().String()+": "), p.Bytes())
				}
				var clients []*net.UDPConn
				srv := serveQueued(t, transport.Config{UDPReadBatch: m.batch}, rec.hooks(), fam.network, fam.addr, 0, func(to *net.UDPAddr) {
					for range peers {
						clients = append(clients, udpPeer(t, fam.network, to))
					}
					for r := range rounds {
						for i, c := range clients {
							send(t, c, []byte(fmt.Sprintf("peer %d round %d", i, r)))
						}
					}
				})
				waitUntil(t, "every datagram", func() bool { return rec.count() == peers*rounds })
				got, opened, _ := rec.snapshot()
				if len(opened) != peers || srv.SessionCount() != peers {
					t.Fatalf("%d sessions opened, %d live; want one per peer (%d)", len(opened), srv.SessionCount(), peers)
				}
				sessOf := map[string]uint64{}
				for _, d := range got {
					var i, r int
					fmt.Sscanf(d.data, "peer %d round %d", &i, &r)
					if want := clients[i].LocalAddr().String(); d.remote != want {
						t.Fatalf("%q delivered to a session of %s, want %s", d.data, d.remote, want)
					}
					if id, ok := sessOf[d.remote]; ok && id != d.id {
						t.Fatalf("peer %s had two sessions (%d, %d)", d.remote, id, d.id)
					}
					sessOf[d.remote] = d.id
				}
				buf := make([]byte, 256)
				for i, c := range clients {
					c.SetReadDeadline(time.Now().Add(10 * time.Second))
					for r := range rounds {
						n, err := c.Read(buf)
						if err != nil {
							t.Fatalf("peer %d: %v", i, err)
						}
						want := fmt.Sprintf("to %s: peer %d round %d", c.LocalAddr(), i, r)
						if string(buf[:n]) != want {
							t.Fatalf("peer %d got %q, want %q", i, buf[:n], want)
						}
					}
				}
			})
		}
	}
}

// A datagram longer than the receive buffer is dropped and counted, not
// delivered cut short; its neighbours in the batch arrive whole. With the
// default 64 KiB buffers the largest IPv4 datagram arrives whole.
func TestUDPTruncatedDatagramDropped(t *testing.T) {
	leakcheck.Check(t)
	for _, m := range readModes {
		t.Run(m.name+"/small-buffer", func(t *testing.T) {
			rec := newRecorder()
			small, big := bytes.Repeat([]byte("s"), 100), bytes.Repeat([]byte("b"), 600)
			srv := serveQueued(t, transport.Config{UDPReadBatch: m.batch}, rec.hooks(), "udp4", "127.0.0.1:0", 512, func(to *net.UDPAddr) {
				c := udpPeer(t, "udp4", to)
				send(t, c, small)
				send(t, c, big)
				send(t, c, small)
			})
			waitUntil(t, "the datagram that fits", func() bool { return rec.count() == 2 })
			waitUntil(t, "the drop to be counted", func() bool { return srv.Stats().DatagramsDropped == 1 })
			got, _, _ := rec.snapshot()
			for _, d := range got {
				if d.data != string(small) {
					t.Fatalf("delivered %d bytes %.8q…, want the 100-byte datagrams only", len(d.data), d.data)
				}
			}
			if st := srv.Stats(); st.MessagesIn != 2 || st.BytesIn != 200 {
				t.Errorf("Stats: %d messages, %d bytes in; want 2, 200", st.MessagesIn, st.BytesIn)
			}
		})
		t.Run(m.name+"/largest", func(t *testing.T) {
			rec := newRecorder()
			largest := bytes.Repeat([]byte("L"), transport.MaxDatagram)
			srv := serveQueued(t, transport.Config{UDPReadBatch: m.batch}, rec.hooks(), "udp4", "127.0.0.1:0", 0, func(to *net.UDPAddr) {
				c := udpPeer(t, "udp4", to)
				send(t, c, []byte("before"))
				send(t, c, largest)
				send(t, c, []byte("after"))
			})
			waitUntil(t, "three datagrams", func() bool { return rec.count() == 3 })
			got, _, _ := rec.snapshot()
			if got[0].data != "before" || got[1].data != string(largest) || got[2].data != "after" {
				t.Fatalf("got %d, %d, %d bytes; want 6, %d, 5", len(got[0].data), len(got[1].data), len(got[2].data), transport.MaxDatagram)
			}
			if n := srv.Stats().DatagramsDropped; n != 0 {
				t.Errorf("%d datagrams dropped", n)
			}
		})
	}
}

// Sessions that end in the middle of a batch (closed by a handler,
// pushed out by a new peer at MaxUDPPeers, panicked, or ended by their
// peer's empty datagram) are finished before the batch goes on: the next
// datagram of the same peer in the batch opens a new session, and no
// datagram reaches a session that has ended.
func TestUDPPeersEndingMidBatch(t *testing.T) {
	leakcheck.Check(t)
	for _, m := range readModes {
		t.Run(m.name+"/closed-by-handler", func(t *testing.T) {
			rec := newRecorder()
			var (
				mu    sync.Mutex
				first = map[string]*transport.Session{}
			)
			var a, b *net.UDPConn
			rec.onRecv = func(s *transport.Session, p *packet.Packet) {
				mu.Lock()
				defer mu.Unlock()
				if _, ok := first[s.RemoteAddr().String()]; !ok {
					first[s.RemoteAddr().String()] = s
				}
				if string(p.Bytes()) == "a1" { // A closes B's session mid-batch
					first[b.LocalAddr().String()].Close()
				}
			}
			srv := serveQueued(t, transport.Config{UDPReadBatch: m.batch}, rec.hooks(), "udp4", "127.0.0.1:0", 0, func(to *net.UDPAddr) {
				a, b = udpPeer(t, "udp4", to), udpPeer(t, "udp4", to)
				send(t, b, []byte("b1"))
				send(t, a, []byte("a1"))
				send(t, b, []byte("b2"))
			})
			waitUntil(t, "three datagrams", func() bool { return rec.count() == 3 })
			waitUntil(t, "B's first session to end", func() bool {
				_, _, closed := rec.snapshot()
				return len(closed) == 1
			})
			got, opened, closed := rec.snapshot()
			if got[2].data != "b2" || got[2].id == got[0].id {
				t.Fatalf("b2 went to session %d, b1 to %d: want a new session", got[2].id, got[0].id)
			}
			if r := closed[got[0].id]; r != transport.ReasonLocal {
				t.Errorf("B's first session ended with %v, want %v", r, transport.ReasonLocal)
			}
			if len(opened) != 3 || srv.SessionCount() != 2 {
				t.Errorf("%d sessions opened, %d live; want 3, 2", len(opened), srv.SessionCount())
			}
			if m.batch > 1 {
				if reads := transport.UDPReads(srv); reads != readsFor(3, m.batch) {
					t.Errorf("%d receive calls: the datagrams were not one batch", reads)
				}
			}
		})
		t.Run(m.name+"/evicted-at-MaxUDPPeers", func(t *testing.T) {
			rec := newRecorder()
			srv := serveQueued(t, transport.Config{UDPReadBatch: m.batch, MaxUDPPeers: 1}, rec.hooks(), "udp4", "127.0.0.1:0", 0, func(to *net.UDPAddr) {
				a, b := udpPeer(t, "udp4", to), udpPeer(t, "udp4", to)
				send(t, a, []byte("a1"))
				send(t, b, []byte("b1"))
				send(t, a, []byte("a2"))
			})
			waitUntil(t, "three datagrams", func() bool { return rec.count() == 3 })
			waitUntil(t, "two evictions", func() bool {
				_, _, closed := rec.snapshot()
				return len(closed) == 2
			})
			got, opened, closed := rec.snapshot()
			if len(opened) != 3 || got[0].id == got[2].id {
				t.Fatalf("%d sessions opened; a1 in %d, a2 in %d: want three sessions", len(opened), got[0].id, got[2].id)
			}
			for _, id := range []uint64{got[0].id, got[1].id} {
				if closed[id] != transport.ReasonLimit {
					t.Errorf("session %d ended with %v, want %v", id, closed[id], transport.ReasonLimit)
				}
			}
			if n := srv.SessionCount(); n != 1 {
				t.Errorf("%d sessions live at MaxUDPPeers 1", n)
			}
		})
		t.Run(m.name+"/panic-and-empty-datagram", func(t *testing.T) {
			rec := newRecorder()
			rec.onRecv = func(_ *transport.Session, p *packet.Packet) {
				if string(p.Bytes()) == "boom" {
					panic("boom")
				}
			}
			srv := serveQueued(t, transport.Config{UDPReadBatch: m.batch}, rec.hooks(), "udp4", "127.0.0.1:0", 0, func(to *net.UDPAddr) {
				a := udpPeer(t, "udp4", to)
				send(t, a, []byte("boom"))
				send(t, a, []byte("after panic"))
				send(t, a, nil) // the peer ends its session
				send(t, a, []byte("after end"))
			})
			waitUntil(t, "three datagrams", func() bool { return rec.count() == 3 })
			waitUntil(t, "two sessions to end", func() bool {
				_, _, closed := rec.snapshot()
				return len(closed) == 2
			})
			got, opened, closed := rec.snapshot()
			if len(opened) != 3 || got[0].id == got[1].id || got[1].id == got[2].id {
				t.Fatalf("%d sessions opened for %v", len(opened), got)
			}
			if closed[got[0].id] != transport.ReasonError || closed[got[1].id] != transport.ReasonPeerClosed {
				t.Errorf("ended with %v and %v, want %v and %v", closed[got[0].id], closed[got[1].id], transport.ReasonError, transport.ReasonPeerClosed)
			}
			if srv.SessionCount() != 1 {
				t.Errorf("%d sessions live, want 1", srv.SessionCount())
			}
		})
	}
}

// notUDPConn hides a *net.UDPConn behind the net.PacketConn interface, so
// the server takes the portable path for packet connections: ReadFrom,
// peers keyed by address text, replies through WriteTo.
type notUDPConn struct{ net.PacketConn }

// A packet connection that is not a *net.UDPConn is served one datagram
// per read, whatever UDPReadBatch says, with each peer in its own session.
func TestUDPFallbackForOtherPacketConns(t *testing.T) {
	leakcheck.Check(t)
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	rec.onRecv = func(s *transport.Session, p *packet.Packet) { s.SendBytes([]byte("re:"), p.Bytes()) }
	srv, err := transport.NewServer(transport.Config{}, rec.hooks())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	to := pc.LocalAddr().(*net.UDPAddr)
	a, b := udpPeer(t, "udp4", to), udpPeer(t, "udp4", to)
	for i := range 3 {
		send(t, a, []byte(fmt.Sprint("a", i)))
		send(t, b, []byte(fmt.Sprint("b", i)))
	}
	if err := srv.ServePacket(notUDPConn{pc}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "six datagrams", func() bool { return rec.count() == 6 })
	if reads := transport.UDPReads(srv); reads != 6 {
		t.Errorf("%d receive calls for 6 datagrams, want 6", reads)
	}
	if n := srv.SessionCount(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
	buf := make([]byte, 64)
	for _, c := range []*net.UDPConn{a, b} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for i := range 3 {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprint("re:", peerName(c, a), i)
			if string(buf[:n]) != want {
				t.Fatalf("got %q, want %q", buf[:n], want)
			}
		}
	}
}

func peerName(c, a *net.UDPConn) string {
	if c == a {
		return "a"
	}
	return "b"
}

// Sends queued together leave as one batch (sendmmsg on Linux) and still
// arrive as one datagram per send, in order, a chained packet flattened
// into one datagram: from a server session whose handler answers one
// datagram with several (BatchSends), and from clients inside Batch,
// connected and bound, over IPv4 and IPv6.
func TestUDPBatchedSends(t *testing.T) {
	leakcheck.Check(t)
	chained := func(a, b string) *packet.Packet {
		p := packet.Get(0)
		p.Write([]byte(a))
		q := packet.Get(0)
		q.Write([]byte(b))
		return p.Chain(q)
	}
	for _, fam := range []struct{ network, addr, local string }{{"udp4", "127.0.0.1:0", "127.0.0.1:0"}, {"udp6", "[::1]:0", "[::1]:0"}} {
		t.Run(fam.network+"/server", func(t *testing.T) {
			hooks := transport.Hooks{BatchSends: true, OnReceive: func(s *transport.Session, p *packet.Packet) {
				s.SendBytes([]byte("one:"), p.Bytes())
				s.Send(chained("two:", string(p.Bytes())))
				s.SendBytes([]byte("three"))
			}}
			srv, err := transport.NewServer(transport.Config{}, hooks)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			a, err := srv.Listen(context.Background(), fam.network, fam.addr)
			if err != nil {
				t.Skipf("no %s loopback: %v", fam.network, err)
			}
			c := udpPeer(t, fam.network, a.(*net.UDPAddr))
			send(t, c, []byte("x"))
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 64)
			for _, want := range []string{"one:x", "two:x", "three"} {
				n, err := c.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				if string(buf[:n]) != want {
					t.Fatalf("got %q, want %q", buf[:n], want)
				}
			}
			waitUntil(t, "bytes out to be counted", func() bool { return srv.Stats().BytesOut == 15 })
		})
		for _, bound := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/client/bound=%v", fam.network, bound), func(t *testing.T) {
				rec := newRecorder()
				srv, a := startServer(t, transport.Config{}, rec.hooks(), fam.network, fam.addr)
				cfg := transport.ClientConfig{}
				if bound {
					cfg.LocalAddr = fam.local
				}
				cl, err := transport.Dial(context.Background(), fam.network, a.String(), cfg, transport.Hooks{})
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				err = cl.Batch(func() {
					for i := range 5 {
						cl.SendBytes([]byte(fmt.Sprint("m", i)))
					}
					cl.Send(chained("m", "5"))
				})
				if err != nil {
					t.Fatal(err)
				}
				waitUntil(t, "six datagrams", func() bool { return rec.count() == 6 })
				got, _, _ := rec.snapshot()
				for i, d := range got {
					if want := fmt.Sprint("m", i); d.data != want {
						t.Fatalf("datagram %d = %q, want %q", i, d.data, want)
					}
				}
				if st := cl.Stats(); st.BytesOut != 12 || st.MessagesOut != 6 {
					t.Errorf("client Stats: %d bytes, %d messages out; want 12, 6", st.BytesOut, st.MessagesOut)
				}
				_ = srv
			})
		}
	}
}
