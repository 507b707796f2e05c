package codec_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// Issue 13, battery item 9: a hostile server against the codec client, in
// both receive modes — replies with sequence numbers nobody asked for,
// duplicated replies, replies after their request timed out, replies sent
// before anything was asked. Every request gets exactly its own reply (each
// payload names its request), the counters are exact, and the connection
// ends with no request slot taken.

// hostilePeer is the server end of one client connection, speaking SRMP
// by hand so that it can send anything.
type hostilePeer struct {
	conn net.Conn
	r    *bufio.Reader
	mu   sync.Mutex // writes come from the serving loop and from the test
}

// srmpIn is a frame the peer read.
type srmpIn struct {
	kind      codec.Kind
	flag, seq uint8
	body      []byte
}

func (p *hostilePeer) next() (srmpIn, error) {
	m, err := readSRMP(p.r)
	if err != nil {
		return srmpIn{}, err
	}
	defer m.Release()
	return srmpIn{m.Kind, m.Flag, m.Seq, bytes.Clone(m.PayloadBytes())}, nil // a view of a pooled buffer until Release
}

// send writes frames in one write.
func (p *hostilePeer) send(frames ...[]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.conn.Write(cat(frames...))
	return err
}

// srmpOut encodes a frame the peer sends.
func srmpOut(kind codec.Kind, flag, seq uint8, body []byte) []byte {
	return cat(srmpShort(byte(kind)<<6|flag&0x3F, seq, uint16(len(body))), body)
}

// hostileServer accepts one connection and runs serve on it until serve
// returns (when the client goes, its read fails). The test gets the peer
// too, to write on it from outside the loop.
func hostileServer(t *testing.T, serve func(p *hostilePeer)) (string, <-chan *hostilePeer) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peers := make(chan *hostilePeer, 1)
	var conn net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		conn = c
		p := &hostilePeer{conn: c, r: bufio.NewReader(c)}
		peers <- p
		serve(p)
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait() // the client is closed by now (cleanups run last first): serve has returned
		if conn != nil {
			conn.Close()
		}
	})
	return l.Addr().String(), peers
}

// echoing answers every request it reads with its own payload, after
// what extra returns for it (nothing, for most).
func echoing(extra func(req srmpIn) [][]byte) func(p *hostilePeer) {
	return func(p *hostilePeer) {
		for {
			req, err := p.next()
			if err != nil {
				return
			}
			if out := extra(req); out != nil {
				if len(out) > 0 {
					p.send(out...)
				}
				continue
			}
			p.send(srmpOut(codec.KindReply, req.flag, req.seq, req.body))
		}
	}
}

// ask sends a request naming itself and checks that the reply names it
// too; it reports false (the test failed) otherwise. Any goroutine may call
// it.
func ask(t *testing.T, c *codec.Client, body string) bool {
	t.Helper()
	r, err := c.RequestBytes(context.Background(), codec.FlagPacket, []byte(body))
	if err != nil {
		t.Errorf("request %q: %v", body, err)
		return false
	}
	defer r.Release()
	if got := string(r.PayloadBytes()); r.Kind != codec.KindReply || got != body {
		t.Errorf("request %q got the reply %q (kind %d)", body, got, r.Kind)
		return false
	}
	return true
}

// settled checks a connection's counters and that no request slot is
// taken.
func settled(t *testing.T, c *codec.Conn, unknown, timedOut uint64) {
	t.Helper()
	if st := c.Stats(); st.Unknown != unknown || st.TimedOut != timedOut {
		t.Errorf("stats %+v, want %d unknown and %d timed out", st, unknown, timedOut)
	}
	if n := c.Stats().InFlight; n != 0 {
		t.Errorf("%d request slots still taken at the end", n)
	}
}

// 10,000 replies with sequence numbers no request holds (ten before each
// real reply, replies and error replies) are dropped and counted; each of
// the 1,000 requests gets its own reply.
func TestHostileServerUnknownSequences(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			addr, _ := hostileServer(t, echoing(func(req srmpIn) [][]byte {
				var out [][]byte
				for k := range uint8(10) {
					kind := codec.KindReply
					if k%2 == 1 {
						kind = codec.KindError
					}
					out = append(out, srmpOut(kind, req.flag, req.seq+1+k, []byte("not yours")))
				}
				return append(out, srmpOut(codec.KindReply, req.flag, req.seq, req.body))
			}))
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, m.mode)
			for i := 0; i < 1000 && ask(t, c, fmt.Sprintf("request %d", i)); i++ {
			}
			settled(t, c.Conn(), 10000, 0)
		})
	}
}

// Every reply sent twice: 1,000 requests one after another, where the
// duplicate arrives before the number is used again, and 1,000 from 20
// goroutines at once with RequestBytesPrefixed, where a duplicate may meet a new
// request holding the same number and must be refused by its payload. Each
// request gets its own reply; exactly 2,000 duplicates are counted.
func TestHostileServerDuplicatedReplies(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			addr, _ := hostileServer(t, echoing(func(req srmpIn) [][]byte {
				if !bytes.HasPrefix(req.body, []byte("dup")) {
					return nil
				}
				reply := srmpOut(codec.KindReply, req.flag, req.seq, req.body)
				return [][]byte{reply, reply}
			}))
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, m.mode)
			for i := 0; i < 1000 && ask(t, c, fmt.Sprintf("dup serial %d", i)); i++ {
			}
			var wg sync.WaitGroup
			for g := range 20 {
				wg.Go(func() {
					for i := range 50 {
						body := fmt.Sprintf("dup %d/%d", g, i)
						r, err := c.Conn().RequestBytesPrefixed(context.Background(), codec.FlagPacket, []byte(body), len(body))
						if err != nil {
							t.Errorf("request %s: %v", body, err)
							return
						}
						if got := string(r.PayloadBytes()); got != body {
							t.Errorf("request %s got the reply %s", body, got)
						}
						r.Release()
					}
				})
			}
			wg.Wait()
			// The barrier's reply follows every duplicate on the wire: once
			// it is in, all have been counted, in either mode.
			ask(t, c, "barrier")
			settled(t, c.Conn(), 2000, 0)
		})
	}
}

// 20 requests time out; then 400 more run, four at a time, enough to go
// round the sequence numbers. The server sends the late replies as soon as
// a new request carries the number of a timed-out one (which the
// quarantine forbids: a late reply would then be taken for the new
// request's), or else after 300 requests, while the timed-out numbers are
// still in quarantine. No late reply reaches another request; all 20 are
// dropped and counted, and their numbers are free again at the end.
func TestHostileServerLateReplies(t *testing.T) {
	const late, timeout = 20, time.Second
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			held := map[uint8]srmpIn{} // the serving loop's own
			onTime := 0
			addr, _ := hostileServer(t, echoing(func(req srmpIn) [][]byte {
				if bytes.HasPrefix(req.body, []byte("late")) {
					held[req.seq] = req // answered later, or never
					return [][]byte{}
				}
				onTime++
				var out [][]byte
				if _, reused := held[req.seq]; reused || onTime == 300 {
					if reused { // first, so that it would be read as this request's reply
						out = append(out, srmpOut(codec.KindReply, req.flag, req.seq, held[req.seq].body))
						delete(held, req.seq)
					}
					for _, h := range held {
						kind := codec.KindReply
						if h.seq%2 == 1 {
							kind = codec.KindError // an error reply is dropped alike
						}
						out = append(out, srmpOut(kind, h.flag, h.seq, h.body))
					}
					clear(held)
				}
				return append(out, srmpOut(codec.KindReply, req.flag, req.seq, req.body))
			}))
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Timeout: timeout}, m.mode)

			var wg sync.WaitGroup
			for i := range late {
				wg.Go(func() {
					_, err := c.RequestBytes(context.Background(), codec.FlagPacket, fmt.Appendf(nil, "late %d", i))
					if !errors.Is(err, codec.ErrTimeout) {
						t.Errorf("held request %d: %v, want ErrTimeout", i, err)
					}
				})
			}
			wg.Wait()
			for g := range 4 {
				wg.Go(func() {
					for i := 0; i < 100 && ask(t, c, fmt.Sprintf("on time %d/%d", g, i)); i++ {
					}
				})
			}
			wg.Wait()
			ask(t, c, "barrier") // its reply follows the late ones
			settled(t, c.Conn(), late, late)
		})
	}
}

// A server that sends 512 replies (both kinds, every sequence number twice)
// and a push as soon as it accepts, before anything is asked: none of them
// is taken for a request's reply, and all 512 are counted. The event-mode
// client drops them as they come (the push, handled after them, shows when);
// the ReceiveSync client finds them waiting in its socket at its first
// request and drains them first (weakness 5).
func TestHostileServerUnsolicitedRepliesAtConnect(t *testing.T) {
	const unsolicited = 512
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			var greeting [][]byte
			for i := range unsolicited {
				kind := codec.KindReply
				if i%2 == 1 {
					kind = codec.KindError
				}
				greeting = append(greeting, srmpOut(kind, codec.FlagPacket, uint8(i), fmt.Appendf(nil, "unsolicited %d", i)))
			}
			greeting = append(greeting, srmpOut(codec.KindOneWay, 0, 0, []byte("greeted")))
			sent := make(chan struct{})
			addr, _ := hostileServer(t, func(p *hostilePeer) {
				p.send(greeting...)
				close(sent)
				echoing(func(srmpIn) [][]byte { return nil })(p)
			})
			greeted := make(chan struct{}, 1)
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Handler: func(_ *codec.Conn, msg any) {
				if m := msg.(*codec.Message); m.Kind == codec.KindOneWay && string(m.PayloadBytes()) == "greeted" {
					greeted <- struct{}{}
				}
			}}, m.mode)
			<-sent
			if m.mode == transport.ReceiveEvent {
				select {
				case <-greeted:
				case <-time.After(10 * time.Second):
					t.Fatal("the push after the unsolicited replies never came")
				}
				if n := c.Conn().Stats().Unknown; n != unsolicited {
					t.Fatalf("%d unknown replies once the greeting is in, want %d", n, unsolicited)
				}
			} else {
				sess := c.Transport().Session()
				waitReceived(t, sess.LocalAddr(), sess.RemoteAddr(), len(cat(greeting...)))
			}
			for i := 0; i < 300 && ask(t, c, fmt.Sprintf("request %d", i)); i++ { // past 256: every number is used
			}
			settled(t, c.Conn(), unsolicited, 0)
		})
	}
}

// waitReceived waits until the kernel holds at least n received bytes for
// the established TCP connection from local to remote (read from
// /proc/net/tcp), so that a ReceiveSync client, which reads nothing between
// requests, is sure to have them before its first request. Without /proc
// it relies on loopback delivering a write before the write returns.
func waitReceived(t *testing.T, local, remote net.Addr, n int) {
	t.Helper()
	l, err1 := netip.ParseAddrPort(local.String())
	r, err2 := netip.ParseAddrPort(remote.String())
	if err1 != nil || err2 != nil || !l.Addr().Is4() || !r.Addr().Is4() {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		queued, ok := rxQueue(l, r)
		if !ok || queued >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bytes received after 10 s", queued, n)
		}
		time.Sleep(time.Millisecond) // polling the kernel's table: nothing to wait on
	}
}

// rxQueue returns the receive queue of the established IPv4 TCP connection
// from local to remote.
func rxQueue(local, remote netip.AddrPort) (int, bool) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, false
	}
	// An address is the 32-bit value in the host's (little-endian) order.
	hex := func(ap netip.AddrPort) string {
		a := ap.Addr().As4()
		return fmt.Sprintf("%02X%02X%02X%02X:%04X", a[3], a[2], a[1], a[0], ap.Port())
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[1] != hex(local) || f[2] != hex(remote) || f[3] != "01" { // 01: established
			continue
		}
		_, rx, ok := strings.Cut(f[4], ":")
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(rx, 16, 64)
		return int(n), err == nil
	}
	return 0, false
}
