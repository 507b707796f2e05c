//go:build linux

package transport_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// countSendmmsg counts the process's sendmmsg calls until the test ends
// (after its servers have closed: cleanups run last first).
func countSendmmsg(t *testing.T) *atomic.Int64 {
	var calls atomic.Int64
	t.Cleanup(transport.HookSendmmsg(func(asked int) (int, syscall.Errno) {
		calls.Add(1)
		return asked, 0
	}))
	return &calls
}

// twoReplies answers each datagram with two, "a:" and "b:" and its text,
// queued together (BatchSends).
func twoReplies() transport.Hooks {
	return transport.Hooks{BatchSends: true, OnReceive: func(s *transport.Session, p *packet.Packet) {
		s.SendBytes([]byte("a:"), p.Bytes())
		s.SendBytes([]byte("b:"), p.Bytes())
	}}
}

// The replies to one receive batch leave in one sendmmsg, whatever the
// number of peers, each addressed to its own peer and in order per peer,
// a peer with two datagrams in the batch included: 40 datagrams from 20
// peers (a batch of 32, then 8) answered with 80 datagrams take 2
// sendmmsg calls. Read one datagram per call (UDPReadBatch 1) and each
// session sends its own two replies: one sendmmsg per datagram.
func TestUDPRepliesOneSendmmsgPerBatch(t *testing.T) {
	leakcheck.Check(t)
	for _, m := range readModes {
		t.Run(m.name, func(t *testing.T) {
			const peers, rounds = 20, 2
			calls := countSendmmsg(t)
			var clients []*net.UDPConn
			srv := serveQueued(t, transport.Config{UDPReadBatch: m.batch}, twoReplies(), "udp4", "127.0.0.1:0", 0, func(to *net.UDPAddr) {
				for range peers {
					clients = append(clients, udpPeer(t, "udp4", to))
				}
				for r := range rounds {
					for i, c := range clients {
						send(t, c, []byte(fmt.Sprintf("p%d r%d", i, r)))
					}
				}
			})
			for i, c := range clients {
				readReplies(t, c, fmt.Sprintf("a:p%d r0", i), fmt.Sprintf("b:p%d r0", i), fmt.Sprintf("a:p%d r1", i), fmt.Sprintf("b:p%d r1", i))
			}
			reads, want := transport.UDPReads(srv), int64(peers*rounds)
			if m.batch > 1 {
				want = int64(reads)
			}
			if got := calls.Load(); got != want {
				t.Errorf("%d sendmmsg calls for %d receive calls, want %d", got, reads, want)
			}
			t.Logf("%d datagrams in %d receive calls, answered in %d sendmmsg calls", peers*rounds, reads, calls.Load())
			waitUntil(t, "the replies to be counted", func() bool { return srv.Stats().MessagesOut == 2*peers*rounds })
		})
	}
}

// The replies of a batch survive partial sends (the kernel taking one
// message per call), a full socket buffer (EAGAIN: the send waits until
// the socket is writable, then goes on) and a destination that fails:
// that peer loses its replies and its session ends (ReasonError, the
// errno as cause); the peers after it in the batch get theirs.
func TestUDPRepliesPartialSendsAndFailure(t *testing.T) {
	leakcheck.Check(t)
	const peers, msgs = 5, 10 // two replies each, one batch
	var mu sync.Mutex
	var calls, eagain, failed int
	t.Cleanup(transport.HookSendmmsg(func(asked int) (int, syscall.Errno) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		switch next := msgs - asked; {
		case next == 2 && eagain == 0: // the first reply to peer 1
			eagain++
			return 0, syscall.EAGAIN
		case next == 4 && failed == 0: // the first reply to peer 2
			failed++
			return 0, syscall.EPERM
		}
		return 1, 0
	}))
	var ended sync.Map // session ID → *transport.CloseError
	hooks := twoReplies()
	hooks.OnClose = func(s *transport.Session, err *transport.CloseError) { ended.Store(s.ID(), err) }
	var clients []*net.UDPConn
	srv := serveQueued(t, transport.Config{}, hooks, "udp4", "127.0.0.1:0", 0, func(to *net.UDPAddr) {
		for i := range peers {
			c := udpPeer(t, "udp4", to)
			clients = append(clients, c)
			send(t, c, []byte(fmt.Sprint("p", i)))
		}
	})
	for i, c := range clients {
		if i != 2 {
			readReplies(t, c, fmt.Sprint("a:p", i), fmt.Sprint("b:p", i))
		}
	}
	// Peer 2's replies went before peer 3's, which has them: none is coming.
	clients[2].SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := clients[2].Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the failed peer read %d bytes (%v), want nothing", n, err)
	}
	waitUntil(t, "the failed peer's session to end", func() bool {
		n := 0
		ended.Range(func(any, any) bool { n++; return true })
		return n == 1
	})
	ended.Range(func(id, v any) bool {
		ce := v.(*transport.CloseError)
		if ce.Reason != transport.ReasonError || !errors.Is(ce.Err, syscall.EPERM) {
			t.Errorf("session %d ended with %v (%v), want %v (EPERM)", id, ce.Reason, ce.Err, transport.ReasonError)
		}
		return true
	})
	if reads := transport.UDPReads(srv); reads != 1 {
		t.Fatalf("%d receive calls: the datagrams were not one batch", reads)
	}
	st := srv.Stats()
	if st.MessagesOut != 8 || st.BytesOut != 8*4 || st.Active != peers-1 {
		t.Errorf("Stats: %d messages, %d bytes out, %d sessions; want 8, 32, %d", st.MessagesOut, st.BytesOut, st.Active, peers-1)
	}
	mu.Lock()
	defer mu.Unlock()
	// 8 messages one per call, the EAGAIN, the failure.
	if calls != 10 || eagain != 1 || failed != 1 {
		t.Errorf("%d sendmmsg calls (%d EAGAIN, %d failed), want 10 (1, 1)", calls, eagain, failed)
	}
}
