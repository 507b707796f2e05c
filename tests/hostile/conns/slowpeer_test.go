package conns_test

import (
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

// Roles a test client announces with its first byte, so the server-side
// hooks know which session is which.
const (
	roleReader    = 'R' // reads everything it is sent
	roleNonReader = 'N' // never reads
)

// pushServer starts a transport server that hands each session to the test
// once its role byte arrives, and records how each session ended.
func pushServer(t *testing.T, cfg transport.Config, n int) (srv *transport.Server, addr string, roles chan roled, ends *endings) {
	t.Helper()
	roles = make(chan roled, n)
	ends = newEndings()
	srv, addr = startEcho(t, cfg, transport.Hooks{
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			if _, seen := s.Get(roleKey{}); !seen && p.Len() > 0 {
				s.Set(roleKey{}, true)
				roles <- roled{s, p.Bytes()[0]}
			}
		},
		OnClose: ends.transportHook,
	})
	return srv, addr, roles, ends
}

type roleKey struct{}

type roled struct {
	sess *transport.Session
	role byte
}

// dialRole connects and announces a role; a non-reader shrinks its receive
// buffer so that the server's writes back up soon.
func dialRole(t *testing.T, addr string, role byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if role == roleNonReader {
		c.(*net.TCPConn).SetReadBuffer(4 << 10)
	}
	if _, err := c.Write([]byte{role}); err != nil {
		t.Fatal(err)
	}
	return c
}

// dialReaderAndNonReaders connects one reading peer and n that never read
// and returns the reader's connection and the n+1 sessions as the server
// announced them.
func dialReaderAndNonReaders(t *testing.T, addr string, roles <-chan roled, n int) (net.Conn, []roled) {
	t.Helper()
	reader := dialRole(t, addr, roleReader)
	for range n {
		dialRole(t, addr, roleNonReader)
	}
	var sessions []roled
	for i := range n + 1 {
		sessions = append(sessions, testwait.Recv(t, roles, 20*time.Second, fmt.Sprintf("session %d of %d to announce itself", i+1, n+1)))
	}
	return reader, sessions
}

// politePush sends total bytes in messages of size, waiting while the
// session's queue is over half of limit: a producer that respects
// back-pressure is never taken for a slow consumer's victim.
func politePush(s *transport.Session, total, size, limit int) error {
	msg := make([]byte, size)
	deadline := time.Now().Add(time.Minute)
	for sent := 0; sent < total; sent += size {
		for s.QueuedBytes() > limit/2 {
			if time.Now().After(deadline) {
				return errors.New("the reader's queue never drained")
			}
			time.Sleep(time.Millisecond)
		}
		if err := s.SendBytes(msg); err != nil {
			return err
		}
	}
	return nil
}

// readAll reads from c until want bytes arrived.
func readAll(c net.Conn, want int) (int, error) {
	c.SetReadDeadline(time.Now().Add(time.Minute))
	n, err := io.ReadFull(c, make([]byte, want))
	return n, err
}

// Battery item 8, send-queue cap: 20 peers that never read, fed by a
// careless producer (two goroutines sending 8 KiB messages as fast as Send
// returns), each end as slow consumers once 256 KiB wait for them and
// nothing is written for SendStallTimeout — with the reason,
// ErrSlowConsumer from Send, and both counters — while a peer that reads
// gets all of its 8 MiB on the same server. No session's queue ever holds
// more than SendQueueBytes: a send that does not fit waits.
func TestSlowConsumers(t *testing.T) {
	leakcheck.Check(t)
	const slow, queue, msgSize, readerBytes = 20, 256 << 10, 8 << 10, 8 << 20
	cfg := transport.Config{SendQueueBytes: queue, SocketSendBuffer: 16 << 10, SendStallTimeout: 500 * time.Millisecond}
	srv, addr, roles, ends := pushServer(t, cfg, slow+1)

	reader, sessions := dialReaderAndNonReaders(t, addr, roles, slow)

	var (
		wg       sync.WaitGroup
		peak     atomic.Int64
		stop     = make(chan struct{})
		sendErrs = make(chan error, 2*slow+1)
		got      int
		readErr  error
	)
	wg.Go(func() { // sample every queue while the producers run
		for {
			for _, r := range sessions {
				if q := int64(r.sess.QueuedBytes()); q > peak.Load() {
					peak.Store(q)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	var producers sync.WaitGroup
	producers.Go(func() { got, readErr = readAll(reader, readerBytes) })
	start := time.Now()
	for _, r := range sessions {
		if r.role == roleReader {
			producers.Go(func() { sendErrs <- politePush(r.sess, readerBytes, msgSize, queue) })
			continue
		}
		for range 2 { // one blocks in the write, the other fills the queue
			producers.Go(func() {
				msg := make([]byte, msgSize)
				for range 10000 { // 80 MiB: far past anything the socket and queue hold
					if err := r.sess.SendBytes(msg); err != nil {
						sendErrs <- err
						return
					}
				}
				sendErrs <- nil
			})
		}
	}
	producers.Wait()
	close(stop)
	wg.Wait()
	close(sendErrs)
	elapsed := time.Since(start)

	slowErrs, otherErrs := 0, 0
	for err := range sendErrs {
		switch {
		case errors.Is(err, transport.ErrSlowConsumer):
			slowErrs++
		case err != nil:
			otherErrs++
			t.Errorf("a producer failed with %v", err)
		}
	}
	eventually(t, 10*time.Second, "every slow consumer's end to be recorded", func() bool { return ends.count() >= slow })
	st := srv.Stats()
	t.Logf("slow consumers: %d non-readers, producers done in %v; sends refused with ErrSlowConsumer: %d; peak queue %d B (cap %d B); reader got %d of %d B; server: overflows %d, closed %s",
		slow, elapsed.Round(time.Millisecond), slowErrs, peak.Load(), queue, got, readerBytes, st.SendQueueOverflows, closedCounts(st))
	for _, r := range sessions {
		want := transport.ReasonSlowConsumer
		if r.role == roleReader {
			want = transport.ReasonNone
		}
		if got := r.sess.Reason(); got != want {
			t.Errorf("%c session %v: reason %v, want %v", r.role, r.sess.RemoteAddr(), got, want)
		}
	}
	if readErr != nil || got != readerBytes {
		t.Errorf("the reader got %d of %d bytes: %v", got, readerBytes, readErr)
	}
	if slowErrs != 2*slow || st.Closed[transport.ReasonSlowConsumer] != slow || st.SendQueueOverflows < slow {
		t.Errorf("sends failing as slow consumers %d (want %d), closed as slow consumers %d (want %d), overflows %d (want ≥ %d)",
			slowErrs, 2*slow, st.Closed[transport.ReasonSlowConsumer], slow, st.SendQueueOverflows, slow)
	}
	if p := peak.Load(); p > queue {
		t.Errorf("a send queue held %d bytes, past SendQueueBytes %d", p, queue)
	}
}

// Battery item 8, write deadline: with a send queue too large to fill, a
// peer that never reads is caught by WriteTimeout instead: the write that
// cannot finish fails after 500 ms (plus the coarse clock's tick), the
// session ends with ReasonWriteTimeout and its counter, and a reading peer
// on the same server is not held up.
func TestWriteTimeouts(t *testing.T) {
	leakcheck.Check(t)
	const stuck, writeTimeout, msgSize, readerBytes = 20, 500 * time.Millisecond, 64 << 10, 4 << 20
	cfg := transport.Config{WriteTimeout: writeTimeout, SendQueueBytes: 64 << 20, SocketSendBuffer: 16 << 10}
	srv, addr, roles, ends := pushServer(t, cfg, stuck+1)

	reader, sessions := dialReaderAndNonReaders(t, addr, roles, stuck)

	type result struct {
		r       roled
		err     error
		elapsed time.Duration
	}
	results := make(chan result, stuck+1)
	var wg sync.WaitGroup
	var got int
	var readErr error
	wg.Go(func() { got, readErr = readAll(reader, readerBytes) })
	for _, r := range sessions {
		wg.Go(func() {
			start := time.Now()
			if r.role == roleReader {
				results <- result{r, politePush(r.sess, readerBytes, msgSize, cfg.SendQueueBytes), time.Since(start)}
				return
			}
			msg := make([]byte, msgSize)
			for range 1024 { // 64 MiB: the queue's cap, never reached by one blocked sender
				if err := r.sess.SendBytes(msg); err != nil {
					results <- result{r, err, time.Since(start)}
					return
				}
			}
			results <- result{r, nil, time.Since(start)}
		})
	}
	wg.Wait()
	close(results)

	var lo, hi time.Duration
	for res := range results {
		if res.r.role == roleReader {
			if res.err != nil {
				t.Errorf("pushing to the reader: %v", res.err)
			}
			continue
		}
		var ce *transport.CloseError
		if !errors.As(res.err, &ce) || ce.Reason != transport.ReasonWriteTimeout {
			t.Errorf("a stuck peer's sends ended with %v, want a write-timeout close", res.err)
		}
		if lo == 0 || res.elapsed < lo {
			lo = res.elapsed
		}
		hi = max(hi, res.elapsed)
	}
	eventually(t, 10*time.Second, "every stuck session's end to be recorded", func() bool { return ends.count() >= stuck })
	st := srv.Stats()
	t.Logf("write timeouts: %d non-readers failed their sends after %v … %v (WriteTimeout %v); reader got %d of %d B; server: closed %s",
		stuck, lo.Round(time.Millisecond), hi.Round(time.Millisecond), writeTimeout, got, readerBytes, closedCounts(st))
	for _, r := range sessions {
		want := transport.ReasonWriteTimeout
		if r.role == roleReader {
			want = transport.ReasonNone
		}
		if got := r.sess.Reason(); got != want {
			t.Errorf("%c session %v: reason %v, want %v", r.role, r.sess.RemoteAddr(), got, want)
		}
	}
	if readErr != nil || got != readerBytes {
		t.Errorf("the reader got %d of %d bytes: %v", got, readerBytes, readErr)
	}
	if st.Closed[transport.ReasonWriteTimeout] != stuck || st.SendQueueOverflows != 0 {
		t.Errorf("closed on write timeouts %d, queue overflows %d; want %d, 0", st.Closed[transport.ReasonWriteTimeout], st.SendQueueOverflows, stuck)
	}
	// The write deadline follows the coarse clock (250 ms ticks), which may
	// lag by a tick.
	if lo < writeTimeout-250*time.Millisecond {
		t.Errorf("a stuck write failed after %v, before WriteTimeout %v", lo, writeTimeout)
	}
}

// Battery item 8, silent peers: 20 peers that say one thing and fall
// silent meet the 1 s idle timeout (ReasonIdle), 20 that never say
// anything meet the 1 s first-byte timeout (ReasonFirstByte), each no
// sooner than its timeout (less a coarse-clock tick for idleness) and
// within 2 s after it, while a peer that keeps talking stays open.
func TestSilentPeers(t *testing.T) {
	leakcheck.Check(t)
	const n, idle, firstByte = 20, time.Second, time.Second
	ends := newEndings()
	srv, addr := startEcho(t, transport.Config{IdleTimeout: idle, FirstByteTimeout: firstByte},
		transport.Hooks{OnClose: ends.transportHook})

	type peer struct {
		c        net.Conn
		lastSent time.Time // the hello, or the start of the dial for the mute
		mute     bool
	}
	var peers []peer
	defer func() {
		for _, p := range peers {
			p.c.Close()
		}
	}()
	for i := range 2 * n {
		start := time.Now()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		p := peer{c: c, lastSent: start, mute: i%2 == 1}
		if !p.mute {
			p.lastSent = time.Now()
			c.Write([]byte("hello"))
		}
		peers = append(peers, p)
	}
	chatty, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer chatty.Close()
	for end := time.Now().Add(idle + firstByte + time.Second); time.Now().Before(end); {
		if _, err := chatty.Write([]byte{'.'}); err != nil {
			t.Fatalf("the chatty peer was cut off: %v", err)
		}
		chatty.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(chatty, make([]byte, 1)); err != nil {
			t.Fatalf("the chatty peer was cut off: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	eventually(t, 10*time.Second, "every silent peer to be closed", func() bool { return ends.count() >= 2*n })

	var lo, hi [2]time.Duration // [idle, first byte]: earliest and latest close after the last byte
	for _, p := range peers {
		end, ok := ends.get(p.c.LocalAddr())
		if !ok {
			t.Fatalf("no end recorded for %v", p.c.LocalAddr())
		}
		want, timeout, k := transport.ReasonIdle, idle, 0
		if p.mute {
			want, timeout, k = transport.ReasonFirstByte, firstByte, 1
		}
		after := end.at.Sub(p.lastSent)
		if lo[k] == 0 || after < lo[k] {
			lo[k] = after
		}
		hi[k] = max(hi[k], after)
		// The idle deadline follows the coarse clock (250 ms ticks), which
		// may lag by a tick; the first-byte deadline is exact.
		early := timeout
		if !p.mute {
			early -= 250 * time.Millisecond
		}
		if end.reason != want || after < early || after > timeout+2*time.Second {
			t.Errorf("silent peer (mute=%v) closed with %v after %v, want %v after %v … %v",
				p.mute, end.reason, after, want, early, timeout+2*time.Second)
		}
	}
	st := srv.Stats()
	t.Logf("silent peers: %d idle closed %v … %v after their last byte (IdleTimeout %v); %d mute closed %v … %v after dialing (FirstByteTimeout %v); server: active %d, closed %s",
		n, lo[0].Round(time.Millisecond), hi[0].Round(time.Millisecond), idle, n, lo[1].Round(time.Millisecond), hi[1].Round(time.Millisecond), firstByte, st.Active, closedCounts(st))
	if st.Closed[transport.ReasonIdle] != n || st.Closed[transport.ReasonFirstByte] != n || st.Active != 1 {
		t.Errorf("closed idle %d, first-byte %d, active %d; want %d, %d, 1 (the chatty peer)",
			st.Closed[transport.ReasonIdle], st.Closed[transport.ReasonFirstByte], st.Active, n, n)
	}
}
