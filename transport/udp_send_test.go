package transport_test

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Concurrent Sends on one UDP client each leave as one whole datagram (a
// chained packet flattened), in each sender's order, and the client's
// counters count every one: whether a send finds the socket free and
// writes at once or queues behind another sender's write.
func TestUDPClientConcurrentSends(t *testing.T) {
	leakcheck.Check(t)
	const senders, each = 4, 50 // small datagrams: all of them fit the server's socket buffer unread
	for _, bound := range []bool{false, true} {
		t.Run(fmt.Sprintf("bound=%v", bound), func(t *testing.T) {
			t.Parallel()
			rec := newRecorder()
			_, a := startServer(t, transport.Config{}, rec.hooks(), "udp4", "127.0.0.1:0")
			cfg := transport.ClientConfig{Mode: transport.ReceiveSync}
			if bound {
				cfg.LocalAddr = "127.0.0.1:0"
			}
			cl := dialClient(t, "udp4", a, cfg, transport.Hooks{})
			var wg sync.WaitGroup
			var wantBytes uint64
			for g := range senders {
				for i := range each {
					wantBytes += uint64(len(fmt.Sprintf("%d:%d", g, i)))
				}
				wg.Go(func() {
					for i := range each {
						var p *packet.Packet
						if i%5 == 0 { // chained: flattened into one datagram
							p = packet.Get(0)
							p.Write([]byte(strconv.Itoa(g) + ":"))
							q := packet.Get(0)
							q.Write([]byte(strconv.Itoa(i)))
							p = p.Chain(q)
						} else {
							p = packet.Wrap([]byte(fmt.Sprintf("%d:%d", g, i)))
						}
						if err := cl.Send(p); err != nil {
							t.Errorf("sender %d, send %d: %v", g, i, err)
							return
						}
					}
				})
			}
			wg.Wait()
			waitUntil(t, "every datagram", func() bool { return rec.count() == senders*each })
			got, _, _ := rec.snapshot()
			next := make([]int, senders)
			for _, d := range got {
				gs, is, ok := strings.Cut(d.data, ":")
				g, err1 := strconv.Atoi(gs)
				i, err2 := strconv.Atoi(is)
				if !ok || err1 != nil || err2 != nil || g < 0 || g >= senders {
					t.Fatalf("datagram %q is not one whole send", d.data)
				}
				if i != next[g] {
					t.Fatalf("sender %d: datagram %d arrived where %d was due", g, i, next[g])
				}
				next[g]++
			}
			if st := cl.Stats(); st.MessagesOut != senders*each || st.BytesOut != wantBytes {
				t.Errorf("client Stats: %d messages, %d bytes out; want %d, %d", st.MessagesOut, st.BytesOut, senders*each, wantBytes)
			}
		})
	}
}

// A datagram the socket refuses (a connected socket told by ICMP that
// nobody listens) fails its Send with ErrNotWritten and closes the
// session: later sends fail with ErrClosed.
func TestUDPClientSendFailureIsNotWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux reports a refused port to the next send; other systems may report it to a read instead")
	}
	leakcheck.Check(t)
	l, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	l.Close() // nobody listens there now: the port answers with ICMP port unreachable
	cl := dialClient(t, "udp4", l.LocalAddr(), transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
	var sendErr error
	for deadline := time.Now().Add(10 * time.Second); sendErr == nil; {
		if time.Now().After(deadline) {
			t.Fatal("no send failed in 10 s: the refused port's ICMP never reached the socket")
		}
		sendErr = cl.Send(packet.Wrap([]byte("x")))
		if sendErr == nil {
			time.Sleep(time.Millisecond)
		}
	}
	if !errors.Is(sendErr, transport.ErrNotWritten) {
		t.Fatalf("refused send: %v, want ErrNotWritten", sendErr)
	}
	if r := cl.Session().Reason(); r == transport.ReasonNone {
		t.Fatal("the session stayed open after a failed send")
	}
	if err := cl.Send(packet.Wrap([]byte("y"))); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after the failure: %v, want ErrClosed", err)
	}
}
