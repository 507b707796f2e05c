package transport_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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

// echoHooks echoes every read back to its sender.
func echoHooks() transport.Hooks {
	return transport.Hooks{OnReceive: func(s *transport.Session, p *packet.Packet) {
		s.Send(p.Share())
	}}
}

func startServer(t *testing.T, cfg transport.Config, hooks transport.Hooks, network, addr string) (*transport.Server, net.Addr) {
	t.Helper()
	srv, err := transport.NewServer(cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	a, err := srv.Listen(context.Background(), network, addr)
	if err != nil {
		t.Fatal(err)
	}
	return srv, a
}

func dial(t *testing.T, network string, a net.Addr) net.Conn {
	t.Helper()
	c, err := net.Dial(network, a.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // generous: a loaded machine, a -race build
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestTCPEcho(t *testing.T) {
	leakcheck.Check(t)
	srv, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	msg := bytes.Repeat([]byte("lifenet "), 10000)
	go c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo mismatch: %v", err)
	}
	// Counters are updated after each write returns, so the client may see
	// the bytes a moment before the server counts them.
	waitUntil(t, "byte counters", func() bool { return srv.Stats().BytesOut == uint64(len(msg)) })
	if st := srv.Stats(); st.Accepted != 1 || st.Active != 1 || st.BytesIn != uint64(len(msg)) {
		t.Fatalf("stats %+v", st)
	}
	c.Close()
	waitUntil(t, "peer-closed count", func() bool { return srv.Stats().Closed[transport.ReasonPeerClosed] == 1 })
	if srv.SessionCount() != 0 {
		t.Fatal("session not removed from the registry")
	}
}

func TestUnixEcho(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "unix", t.TempDir()+"/s.sock")
	c := dial(t, "unix", a)
	c.Write([]byte("ping"))
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("unix echo %q %v", got, err)
	}
}

func TestPortZeroIsShared(t *testing.T) {
	leakcheck.Check(t)
	srv, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	ua, err := srv.Listen(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if a.(*net.TCPAddr).Port != ua.(*net.UDPAddr).Port || srv.Port() != ua.(*net.UDPAddr).Port {
		t.Fatalf("tcp %v, udp %v, Port %d", a, ua, srv.Port())
	}
}

// Many goroutines send numbered messages on one session, by SendBytes or
// by Send (a packet of one segment or a chain of two), so that a message
// leaves alone, straight from its sender, or queued behind a write in
// progress; each goroutine's messages must arrive in its order, none lost.
func TestConcurrentSendersKeepOrder(t *testing.T) {
	leakcheck.Check(t)
	opened := make(chan *transport.Session, 1)
	_, a := startServer(t, transport.Config{}, transport.Hooks{OnOpen: func(s *transport.Session) { opened <- s }}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	sess := <-opened

	const senders, each = 8, 2000
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				var m [8]byte
				binary.LittleEndian.PutUint32(m[:], uint32(g))
				binary.LittleEndian.PutUint32(m[4:], uint32(i))
				var err error
				switch g % 3 {
				case 0:
					err = sess.SendBytes(m[:])
				case 1:
					err = sess.Send(packet.Wrap(append([]byte(nil), m[:]...)))
				default:
					err = sess.Send(packet.Wrap(append([]byte(nil), m[:4]...)).Chain(packet.Wrap(append([]byte(nil), m[4:]...))))
				}
				if err != nil {
					t.Errorf("send: %v", err)
					return
				}
			}
		})
	}
	next := make([]uint32, senders)
	buf := make([]byte, 8)
	for range senders * each {
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		g, i := binary.LittleEndian.Uint32(buf), binary.LittleEndian.Uint32(buf[4:])
		if i != next[g] {
			t.Fatalf("sender %d: got message %d, want %d", g, i, next[g])
		}
		next[g]++
	}
	wg.Wait()
}

// A peer that never reads fills the send queue, and with a sender waiting
// for room and no byte written for SendStallTimeout the session closes as
// a slow consumer: the waiting sender fails with ErrSlowConsumer and the
// queued buffers are released.
func TestSlowConsumerClosesSession(t *testing.T) {
	leakcheck.Check(t)
	closed := make(chan *transport.CloseError, 1)
	opened := make(chan *transport.Session, 1)
	cfg := transport.Config{SendQueueBytes: 64 << 10, SocketSendBuffer: 4096, SendStallTimeout: 200 * time.Millisecond}
	srv, a := startServer(t, cfg, transport.Hooks{
		OnOpen:  func(s *transport.Session) { opened <- s },
		OnClose: func(_ *transport.Session, e *transport.CloseError) { closed <- e },
	}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.(*net.TCPConn).SetReadBuffer(4096)
	sess := <-opened

	var wg sync.WaitGroup
	var overflow error
	var once sync.Once
	for range 2 { // one sender blocks in the write, the other fills the queue
		wg.Go(func() {
			for range 10000 {
				if err := sess.SendBytes(make([]byte, 1024)); err != nil {
					once.Do(func() { overflow = err })
					return
				}
			}
		})
	}
	wg.Wait()
	e := <-closed
	if e.Reason != transport.ReasonSlowConsumer || !errors.Is(overflow, transport.ErrSlowConsumer) {
		t.Fatalf("close reason %v, send error %v", e.Reason, overflow)
	}
	if st := srv.Stats(); st.SendQueueOverflows == 0 || st.Closed[transport.ReasonSlowConsumer] != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := sess.SendBytes([]byte("x")); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("send after close = %v", err)
	}
}

// The first-byte timeout closes a silent connection, the idle timeout a
// quiet session; a session that keeps talking stays. In a synctest bubble
// over in-memory connections, so the timeouts run on the bubble's clock:
// exact, and no real seconds spent waiting.
func TestIdleAndFirstByteTimeouts(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		reasons := make(chan transport.Reason, 4)
		cfg := transport.Config{IdleTimeout: 600 * time.Millisecond, FirstByteTimeout: 300 * time.Millisecond}
		srv, err := transport.NewServer(cfg, transport.Hooks{
			OnClose: func(_ *transport.Session, e *transport.CloseError) { reasons <- e.Reason },
		})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		l := memnet.Listen("transport")
		if err := srv.Serve(l); err != nil {
			t.Fatal(err)
		}

		start := time.Now()
		silent := dialMem(l)
		defer silent.Close()
		if r := <-reasons; r != transport.ReasonFirstByte {
			t.Fatalf("silent connection closed with %v", r)
		}
		if d := time.Since(start); d != 300*time.Millisecond {
			t.Errorf("first-byte close after %v, want 300ms", d)
		}
		quiet := dialMem(l)
		defer quiet.Close()
		quiet.Write([]byte("hi"))
		start = time.Now()
		if r := <-reasons; r != transport.ReasonIdle {
			t.Fatalf("quiet connection closed with %v", r)
		}
		// The idle deadline moves on the coarse clock: 600 ms after the
		// last read, plus up to two of its 250 ms ticks.
		if d := time.Since(start); d < 600*time.Millisecond || d > 1100*time.Millisecond {
			t.Fatalf("idle close after %v, want 600ms…1.1s", d)
		}
		chatty := dialMem(l)
		defer chatty.Close()
		for range 10 { // 1.5 s of traffic, never 600 ms apart
			chatty.Write([]byte("x"))
			time.Sleep(150 * time.Millisecond)
		}
		if srv.SessionCount() != 1 {
			t.Fatal("an active session was closed")
		}
	})
}

// Connection limits: at the limit connections are served, one past it is
// refused and counted.
func TestConnectionLimits(t *testing.T) {
	leakcheck.Check(t)
	for _, cfg := range []transport.Config{{MaxConns: 3}, {MaxConnsPerIP: 3}} {
		srv, a := startServer(t, cfg, echoHooks(), "tcp", "127.0.0.1:0")
		for range 3 {
			c := dial(t, "tcp", a)
			c.Write([]byte("a"))
			io.ReadFull(c, make([]byte, 1))
		}
		extra := dial(t, "tcp", a)
		extra.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := extra.Read(make([]byte, 1)); err == nil {
			t.Fatalf("%+v: connection past the limit was served", cfg)
		}
		waitUntil(t, "the limit counter", func() bool { return srv.Stats().Closed[transport.ReasonLimit] == 1 })
		if st := srv.Stats(); st.Active != 3 {
			t.Fatalf("%+v: stats %+v", cfg, st)
		}
	}
}

// The registry finds sessions by ID; switched off it finds none, while
// counting, Range and Broadcast still reach every open session.
func TestBroadcastAndRegistry(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoSessionRegistry=%v", off), func(t *testing.T) {
			leakcheck.Check(t)
			srv, a := startServer(t, transport.Config{NoSessionRegistry: off}, transport.Hooks{}, "tcp", "127.0.0.1:0")
			conns := []net.Conn{dial(t, "tcp", a), dial(t, "tcp", a), dial(t, "tcp", a), dial(t, "tcp", a)}
			waitUntil(t, "4 sessions", func() bool { return srv.SessionCount() == 4 })
			conns[0].Close() // a session leaves from the middle of the server's set
			conns = conns[1:]
			waitUntil(t, "3 sessions", func() bool { return srv.SessionCount() == 3 })
			var ids []uint64
			srv.Range(func(s *transport.Session) bool { ids = append(ids, s.ID()); return true })
			if len(ids) != 3 {
				t.Fatalf("Range saw %d sessions, want 3", len(ids))
			}
			skip := ids[0]
			if _, ok := srv.Session(skip); ok == off {
				t.Fatalf("Session(id) found=%v with the registry off=%v", ok, off)
			}
			msg := packet.Get(5)
			copy(msg.Bytes(), "hello")
			n := srv.Broadcast(msg, func(s *transport.Session) bool { return s.ID() != skip })
			if n != 2 {
				t.Fatalf("Broadcast reached %d sessions, want 2", n)
			}
			got := 0
			for _, c := range conns {
				c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				b := make([]byte, 5)
				if _, err := io.ReadFull(c, b); err == nil && string(b) == "hello" {
					got++
				}
			}
			if got != 2 {
				t.Fatalf("%d connections got the broadcast", got)
			}
		})
	}
}

// Many sessions ending in any order leave the registry exact: every open
// session is listed and found, no ended one is, also after the set has
// shrunk from its peak.
func TestRegistryChurn(t *testing.T) {
	leakcheck.Check(t)
	srv, err := transport.NewServer(transport.Config{ReadBufferSize: 512}, transport.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l := memnet.Listen("transport")
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	const total, keep = 1500, 100
	for range total {
		c := dialMem(l)
		defer c.Close()
	}
	waitUntil(t, "all sessions", func() bool { return srv.SessionCount() == total })
	var all []*transport.Session
	srv.Range(func(s *transport.Session) bool { all = append(all, s); return true })
	rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for _, s := range all[keep:] {
		s.Close()
	}
	waitUntil(t, "the kept sessions", func() bool { return srv.SessionCount() == keep })
	listed := map[uint64]bool{}
	srv.Range(func(s *transport.Session) bool { listed[s.ID()] = true; return true })
	for i, s := range all {
		_, found := srv.Session(s.ID())
		if open := i < keep; listed[s.ID()] != open || found != open {
			t.Fatalf("session %d open=%v: listed=%v found=%v", s.ID(), open, listed[s.ID()], found)
		}
	}
	if len(listed) != keep {
		t.Fatalf("Range listed %d sessions, want %d", len(listed), keep)
	}
}

func TestSessionBag(t *testing.T) {
	leakcheck.Check(t)
	type appState struct{ n int }
	type stateKey struct{}
	done := make(chan int, 2)
	_, a := startServer(t, transport.Config{}, transport.Hooks{
		OnOpen: func(s *transport.Session) { s.Set(stateKey{}, &appState{}); s.Set("codec", "srmp") },
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			v, _ := s.Get(stateKey{})
			st, ok := v.(*appState)
			v, _ = s.Get("codec")
			if ok && v == "srmp" {
				st.n += p.Len()
				if st.n == 3 || st.n == 6 {
					done <- st.n
				}
			}
		},
	}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.Write([]byte("abc"))
	if n := <-done; n != 3 {
		t.Fatalf("state counted %d bytes of the first write", n)
	}
	c.Write([]byte("def")) // a second OnReceive: the state carried over
	if n := <-done; n != 6 {
		t.Fatalf("state counted %d bytes", n)
	}
}

// Shutdown lets a handler that is running finish and its reply be written,
// then closes the session with ReasonShutdown.
func TestShutdownFinishesInFlightWork(t *testing.T) {
	leakcheck.Check(t)
	inHandler, release := make(chan struct{}), make(chan struct{})
	// Room for the sessions of waitUntil's probes too: one accepted just
	// before the listener closed is shut down as well, and an OnClose that
	// blocked would hold Shutdown for good.
	type closed struct {
		s      *transport.Session
		reason transport.Reason
	}
	reasons := make(chan closed, 64)
	var working *transport.Session // the session whose work is in flight (a probe's closes first, as "peer closed")
	srv, a := startServer(t, transport.Config{}, transport.Hooks{
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			working = s
			close(inHandler)
			<-release // slow work in flight
			s.SendBytes([]byte("done"))
		},
		OnClose: func(s *transport.Session, e *transport.CloseError) { reasons <- closed{s, e.Reason} },
	}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.Write([]byte("go"))
	<-inHandler
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	// Shutdown has begun once the listener refuses connections; only then
	// does the handler finish.
	waitUntil(t, "Shutdown to close the listener", func() bool {
		c, err := net.Dial("tcp", a.String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(release)
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(c)
	if string(reply) != "done" {
		t.Fatalf("reply %q lost in shutdown", reply)
	}
	for c := range reasons {
		if c.s != working {
			continue
		}
		if c.reason != transport.ReasonShutdown {
			t.Fatalf("closed with %v", c.reason)
		}
		break
	}
	srv.Close() // idempotent after Shutdown
}

// Shutdown honours its deadline: a handler that outlives it is cut off.
// In a synctest bubble over an in-memory connection, so that the handler
// ends (200 ms) strictly after the deadline (50 ms) on the bubble's clock.
func TestShutdownDeadline(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		entered := make(chan struct{})
		srv, err := transport.NewServer(transport.Config{}, transport.Hooks{
			OnReceive: func(s *transport.Session, p *packet.Packet) { close(entered); <-release },
		})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		l := memnet.Listen("transport")
		if err := srv.Serve(l); err != nil {
			t.Fatal(err)
		}
		c := dialMem(l)
		defer c.Close()
		c.Write([]byte("x"))
		<-entered
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		go func() { time.Sleep(200 * time.Millisecond); close(release) }()
		start := time.Now()
		if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want deadline exceeded", err)
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Fatalf("Shutdown returned after %v, before its deadline", d)
		}
	})
}

// A panicking handler closes its session with a PanicError, not the server.
func TestHandlerPanicClosesSession(t *testing.T) {
	leakcheck.Check(t)
	closed := make(chan *transport.CloseError, 1)
	_, a := startServer(t, transport.Config{}, transport.Hooks{
		OnReceive: func(*transport.Session, *packet.Packet) { panic("boom") },
		OnClose:   func(_ *transport.Session, e *transport.CloseError) { closed <- e },
	}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.Write([]byte("x"))
	e := <-closed
	var pe *transport.PanicError
	if e.Reason != transport.ReasonError || !errors.As(e, &pe) || pe.Value != "boom" {
		t.Fatalf("close %v", e)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []transport.Config{{MaxConns: -1}, {ReadBufferSize: -5}, {NoDelay: 9}} {
		if _, err := transport.NewServer(cfg, transport.Hooks{}); err == nil {
			t.Errorf("NewServer(%+v) accepted", cfg)
		}
	}
}

// A peer that stops reading makes a blocked write hit WriteTimeout.
func TestWriteTimeout(t *testing.T) {
	leakcheck.Check(t)
	closed := make(chan *transport.CloseError, 1)
	opened := make(chan *transport.Session, 1)
	cfg := transport.Config{WriteTimeout: 300 * time.Millisecond, SendQueueBytes: 64 << 20, SocketSendBuffer: 4096}
	_, a := startServer(t, cfg, transport.Hooks{
		OnOpen:  func(s *transport.Session) { opened <- s },
		OnClose: func(_ *transport.Session, e *transport.CloseError) { closed <- e },
	}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	c.(*net.TCPConn).SetReadBuffer(4096)
	sess := <-opened
	err := sess.Send(packet.Get(32 << 20)) // far more than the socket buffers hold
	e := <-closed
	if e.Reason != transport.ReasonWriteTimeout || !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("close %v, send error %v", e, err)
	}
}

// An in-memory listener (net.Pipe) serves like a socket.
func TestInMemoryListener(t *testing.T) {
	leakcheck.Check(t)
	l := memnet.Listen("transport")
	srv, err := transport.NewServer(transport.Config{}, echoHooks())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	c := dialMem(l)
	defer c.Close()
	go c.Write([]byte("in memory"))
	got := make([]byte, 9)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "in memory" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// dialMem connects to the in-memory listener l (whose Dial fails only
// once l is closed).
func dialMem(l *memnet.Listener) net.Conn {
	c, err := l.Dial(context.Background())
	if err != nil {
		panic(err)
	}
	return c
}

// Messages of mixed sizes — chained header+payload packets, small ones
// staged into shared buffers, large ones written in place — from several
// goroutines arrive whole, in each sender's order.
func TestMixedSizeStreamIntact(t *testing.T) {
	leakcheck.Check(t)
	opened := make(chan *transport.Session, 1)
	_, a := startServer(t, transport.Config{}, transport.Hooks{OnOpen: func(s *transport.Session) { opened <- s }}, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	sess := <-opened

	const senders, each = 4, 400
	size := func(g, i int) int { return (g*7919 + i*104729) % 3000 } // 0…2999 bytes
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				n := size(g, i)
				hdr := packet.Get(12) // length, sender, sequence
				binary.LittleEndian.PutUint32(hdr.Bytes(), uint32(n))
				binary.LittleEndian.PutUint32(hdr.Bytes()[4:], uint32(g))
				binary.LittleEndian.PutUint32(hdr.Bytes()[8:], uint32(i))
				body := packet.Get(n)
				for k := range body.Bytes() {
					body.Bytes()[k] = byte(g + i + k)
				}
				if err := sess.Send(hdr.Chain(body)); err != nil {
					t.Errorf("send: %v", err)
					return
				}
			}
		})
	}
	next := make([]int, senders)
	hdr := make([]byte, 12)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for range senders * each {
		if _, err := io.ReadFull(c, hdr); err != nil {
			t.Fatal(err)
		}
		n, g, i := int(binary.LittleEndian.Uint32(hdr)), int(binary.LittleEndian.Uint32(hdr[4:])), int(binary.LittleEndian.Uint32(hdr[8:]))
		if g >= senders || i != next[g] || n != size(g, i) {
			t.Fatalf("got sender %d message %d (%d bytes); want message %d", g, i, n, next[g])
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(c, body); err != nil {
			t.Fatal(err)
		}
		for k, b := range body {
			if b != byte(g+i+k) {
				t.Fatalf("sender %d message %d: byte %d corrupt", g, i, k)
			}
		}
		next[g]++
	}
	wg.Wait()
}
