package transport_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// The send queue's rules (issue 26 F2, F3): SendQueueBytes is room, not a
// burst limit; a send that does not fit waits (SendContext up to its
// context); Enqueue never waits; and a slow consumer is a peer that takes
// nothing for SendStallTimeout while its queue is full. Most tests run in a
// synctest bubble over in-memory connections: net.Pipe has no socket
// buffer, so a peer that does not read blocks the first write at once, and
// the stall watch and deadlines run on the bubble's clock.

// memServer starts a server with cfg and hooks on an in-memory listener
// (inside the bubble that calls it) and returns a dialer and a channel of
// the sessions as they open.
func memServer(t *testing.T, cfg transport.Config, hooks transport.Hooks) (dial func() net.Conn, opened chan *transport.Session) {
	t.Helper()
	opened = make(chan *transport.Session, 64)
	open := hooks.OnOpen
	hooks.OnOpen = func(s *transport.Session) {
		if open != nil {
			open(s)
		}
		opened <- s
	}
	srv, err := transport.NewServer(cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	l := memnet.Listen("sendqueue")
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	return func() net.Conn {
		c := dialMem(l)
		t.Cleanup(func() { c.Close() })
		return c
	}, opened
}

// Enqueue returns at once however little the peer reads: the session's
// own goroutine writes. A queue past SendQueueBytes with no byte written
// for SendStallTimeout closes the session as a slow consumer (within a
// quarter of the timeout past it); one that Enqueue would take past twice
// SendQueueBytes is closed at once.
func TestEnqueueNeverWaitsForThePeer(t *testing.T) {
	leakcheck.Check(t)
	const room, stall = 64 << 10, time.Second
	cfg := transport.Config{SendQueueBytes: room, SendStallTimeout: stall}
	t.Run("stalled past the room", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			closed := make(chan *transport.CloseError, 1)
			dial, opened := memServer(t, cfg, transport.Hooks{OnClose: func(_ *transport.Session, e *transport.CloseError) { closed <- e }})
			dial() // never reads
			s := <-opened
			start := time.Now()
			for i := range 100 { // 100 KiB: past the room, within twice it
				if err := s.EnqueueBytes(make([]byte, 1024)); err != nil {
					t.Fatalf("Enqueue %d: %v", i, err)
				}
			}
			if d := time.Since(start); d != 0 {
				t.Fatalf("100 Enqueues to a peer that does not read took %v of the bubble's clock, want none", d)
			}
			e := <-closed
			if d := time.Since(start); e.Reason != transport.ReasonSlowConsumer || d < stall || d > stall+stall/4 {
				t.Fatalf("closed with %v after %v, want a slow consumer after SendStallTimeout (%v) plus at most a quarter", e, d, stall)
			}
			if err := s.EnqueueBytes([]byte("x")); !errors.Is(err, transport.ErrSlowConsumer) || !errors.Is(err, transport.ErrNotWritten) {
				t.Fatalf("Enqueue after the close: %v", err)
			}
		})
	})
	t.Run("past twice the room", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			dial, opened := memServer(t, cfg, transport.Hooks{})
			dial()
			s := <-opened
			var err error
			n := 0
			for ; err == nil && n < 1000; n++ {
				err = s.EnqueueBytes(make([]byte, 1024))
			}
			if !errors.Is(err, transport.ErrSlowConsumer) || s.Reason() != transport.ReasonSlowConsumer {
				t.Fatalf("Enqueue %d: %v, session %v; want ErrSlowConsumer", n, err, s.Reason())
			}
			// 128 KiB held, queued or being written: the next is refused.
			if n != 2*room/1024+1 {
				t.Errorf("the Enqueue that failed was number %d, want %d (twice SendQueueBytes held)", n, 2*room/1024+1)
			}
		})
	})
}

// A send that does not fit waits for room, and SendContext's wait ends with
// its context: the send fails with the context's error and ErrNotWritten,
// and the session stays open. The peer, which never reads, is still a slow
// consumer: its unwritten bytes stay past the room, and SendStallTimeout
// after the queue filled the session closes, before WriteTimeout would.
func TestSendContextEndsItsWaitWithTheContext(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		const room = 4 << 10
		closed := make(chan *transport.CloseError, 1)
		cfg := transport.Config{SendQueueBytes: room, SendStallTimeout: time.Second, WriteTimeout: 5 * time.Second}
		dial, opened := memServer(t, cfg, transport.Hooks{OnClose: func(_ *transport.Session, e *transport.CloseError) { closed <- e }})
		dial()
		s := <-opened
		go s.SendBytes(make([]byte, 8<<10)) // blocks in the write: the peer does not read
		synctest.Wait()
		if err := s.SendBytes(make([]byte, room)); err != nil { // the room, behind the write
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := s.SendBytesContext(ctx, []byte("one byte too many"))
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, transport.ErrNotWritten) || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("SendBytesContext after %v: %v, want the context's deadline after 100ms", time.Since(start), err)
		}
		err = s.SendContext(ctx, packet.Wrap([]byte("late")))
		if !errors.Is(err, context.DeadlineExceeded) || s.Reason() != transport.ReasonNone {
			t.Fatalf("SendContext with an ended context: %v (session %v)", err, s.Reason())
		}
		if e := <-closed; e.Reason != transport.ReasonSlowConsumer || time.Since(start) > cfg.SendStallTimeout*5/4 {
			t.Fatalf("closed with %v after %v, want a slow consumer within SendStallTimeout (%v) and a quarter", e, time.Since(start), cfg.SendStallTimeout)
		}
	})
}

// A peer that reads slowly but steadily is no slow consumer, however long
// its queue stays full: large messages are written in pieces, each taken
// piece is progress. Here a 2 MiB message and 1 MiB behind it (senders
// waiting for room all along) go to a peer reading 64 KiB every 100 ms, 3
// seconds' worth, with SendStallTimeout at 1 s. Written in one call, the
// 2 MiB would show no progress until the peer had all of it.
func TestStallWatchSparesASlowReader(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		const room, big, small, smalls = 64 << 10, 2 << 20, 64 << 10, 16
		cfg := transport.Config{SendQueueBytes: room, SendStallTimeout: time.Second}
		dial, opened := memServer(t, cfg, transport.Hooks{})
		c := dial()
		s := <-opened
		want := make([]byte, 0, big+small*smalls)
		msg := func(i, n int) []byte {
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(i)
			}
			want = append(want, b...)
			return b
		}
		first := msg(0, big)
		var wg sync.WaitGroup
		errs := make(chan error, smalls+1)
		wg.Go(func() { errs <- s.SendBytes(first) })
		synctest.Wait() // the big one is being written
		for i := range smalls {
			b := msg(i+1, small)
			wg.Go(func() { errs <- s.SendBytes(b) })
			synctest.Wait() // in order: each waits behind the one before
		}
		start := time.Now()
		got := make([]byte, 0, len(want))
		buf := make([]byte, 64<<10)
		for len(got) < len(want) {
			time.Sleep(100 * time.Millisecond)
			n, err := io.ReadFull(c, buf[:min(len(buf), len(want)-len(got))])
			got = append(got, buf[:n]...)
			if err != nil {
				t.Fatalf("after %d of %d bytes (%v): %v (session %v)", len(got), len(want), time.Since(start), err, s.Reason())
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("a send failed: %v", err)
			}
		}
		if string(got) != string(want) {
			t.Error("the peer got the bytes out of order")
		}
		if d := time.Since(start); d < 3*cfg.SendStallTimeout || s.Reason() != transport.ReasonNone {
			t.Fatalf("read for %v, session %v; want over 3 s of a full queue and the session open", d, s.Reason())
		}
	})
}

// Eight goroutines sending four 2 MiB messages each at once, 16 MiB in
// flight against the default 4 MiB of room, all succeed to a peer that
// reads: the sends wait for room. Each goroutine's messages arrive whole
// and in its order. The queue used to close the session as a slow
// consumer at the third message.
func TestConcurrentLargeSendsToAReaderAllSucceed(t *testing.T) {
	leakcheck.Check(t)
	const senders, each, size = 8, 4, 2 << 20
	opened := make(chan *transport.Session, 1)
	srv, a := startServer(t, transport.Config{}, transport.Hooks{OnOpen: func(s *transport.Session) { opened <- s }}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	s := <-opened
	read := make(chan error, 1)
	go func() {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		next := make([]uint32, senders)
		buf := make([]byte, size)
		for range senders * each {
			if _, err := io.ReadFull(c, buf); err != nil {
				read <- err
				return
			}
			g, i := binary.LittleEndian.Uint32(buf), binary.LittleEndian.Uint32(buf[4:])
			if g >= senders || i != next[g] || buf[size-1] != byte(g) {
				read <- fmt.Errorf("message %d of sender %d (want %d), last byte %d", i, g, next[g], buf[size-1])
				return
			}
			next[g]++
		}
		read <- nil
	}()
	var wg sync.WaitGroup
	errs := make(chan error, senders*each)
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				p := packet.Get(size)
				b := p.Bytes()
				clear(b)
				binary.LittleEndian.PutUint32(b, uint32(g))
				binary.LittleEndian.PutUint32(b[4:], uint32(i))
				b[size-1] = byte(g)
				if err := s.Send(p); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a send failed: %v", err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if st := srv.Stats(); s.Reason() != transport.ReasonNone || st.SendQueueOverflows != 0 {
		t.Fatalf("session %v, stats %+v", s.Reason(), st)
	}
}

// Broadcast never waits for a peer: to ten sessions of which three never
// read, 50 broadcasts take none of the bubble's clock, the seven readers
// get every message in order, and the three are closed as slow consumers
// by their own queues. Broadcast used to write to each session itself and
// wait up to WriteTimeout on each peer that did not read.
func TestBroadcastDoesNotWaitForPeersThatDoNotRead(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		const conns, deaf, msgs, size = 10, 3, 50, 1024
		reasons := make(chan transport.Reason, conns)
		cfg := transport.Config{SendQueueBytes: 32 << 10, SendStallTimeout: time.Second} // 50 KiB broadcast: past the room, within twice it
		srv, err := transport.NewServer(cfg, transport.Hooks{OnClose: func(_ *transport.Session, e *transport.CloseError) { reasons <- e.Reason }})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		l := memnet.Listen("broadcast")
		if err := srv.Serve(l); err != nil {
			t.Fatal(err)
		}
		var readers sync.WaitGroup
		got := make([]int, conns)
		for i := range conns {
			c := dialMem(l)
			defer c.Close()
			if i < deaf {
				continue
			}
			readers.Go(func() {
				b := make([]byte, size)
				for range msgs {
					if _, err := io.ReadFull(c, b); err != nil || int(b[0]) != got[i] {
						return
					}
					got[i]++
				}
			})
		}
		for srv.SessionCount() < conns {
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		for m := range msgs {
			p := packet.Get(size)
			clear(p.Bytes())
			p.Bytes()[0] = byte(m)
			if n := srv.Broadcast(p, nil); n < conns-deaf {
				t.Fatalf("broadcast %d reached %d sessions", m, n)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("%d broadcasts took %v of the bubble's clock, want none", msgs, d)
		}
		readers.Wait()
		for i := deaf; i < conns; i++ {
			if got[i] != msgs {
				t.Errorf("reader %d got %d of %d messages in order", i, got[i], msgs)
			}
		}
		for range deaf {
			if r := <-reasons; r != transport.ReasonSlowConsumer {
				t.Errorf("a peer that does not read closed with %v, want a slow consumer", r)
			}
		}
		if n := srv.SessionCount(); n != conns-deaf {
			t.Errorf("%d sessions left, want the %d readers", n, conns-deaf)
		}
	})
}
