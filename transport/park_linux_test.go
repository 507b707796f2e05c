package transport_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// parkConfig parks a session after 20 ms without bytes.
func parkConfig() transport.Config {
	return transport.Config{ParkAfter: 20 * time.Millisecond}
}

// roundTrip writes msg on c and reads its echo.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo of %q: %q, %v", msg, got, err)
	}
}

func TestIdleSessionParksAndReadsOnWhenBytesCome(t *testing.T) {
	leakcheck.Check(t)
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(t.TempDir(), "s")
			}
			srv, a := startServer(t, parkConfig(), echoHooks(), network, addr)
			c := dial(t, network, a)
			for i := range 3 {
				roundTrip(t, c, fmt.Sprintf("hello %d", i))
				waitUntil(t, "the session to park", func() bool { return srv.Stats().Parked == 1 })
				if st := srv.Stats(); st.ReadBufferBytes != 0 || st.Active != 1 {
					t.Fatalf("parked: stats %+v, want no read buffer held and the session open", st)
				}
			}
		})
	}
}

func TestSessionParksBeforeItsFirstByte(t *testing.T) {
	leakcheck.Check(t)
	opened := make(chan struct{}, 1)
	hooks := echoHooks()
	hooks.OnOpen = func(*transport.Session) { opened <- struct{}{} }
	srv, a := startServer(t, parkConfig(), hooks, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	<-opened
	waitUntil(t, "the silent connection to park", func() bool { return srv.Stats().Parked == 1 })
	roundTrip(t, c, "first")
}

func TestRoutedConnectionParksBeforeItsFirstByte(t *testing.T) {
	leakcheck.Check(t)
	handed := make(chan *transport.HandedConn, 1)
	hooks := echoHooks()
	hooks.Route = func(first []byte, full bool) transport.Route {
		if first[0] == 'H' {
			return transport.RouteHandOff
		}
		return transport.RouteServe
	}
	hooks.HandOff = func(c *transport.HandedConn) { handed <- c }
	srv, a := startServer(t, parkConfig(), hooks, "tcp", "127.0.0.1:0")
	served := dial(t, "tcp", a)
	off := dial(t, "tcp", a)
	waitUntil(t, "both connections to park", func() bool { return srv.Stats().Parked == 2 })
	roundTrip(t, served, "served")
	if _, err := off.Write([]byte("HTTP")); err != nil {
		t.Fatal(err)
	}
	hc := <-handed
	defer hc.Close()
	got := make([]byte, 4)
	if _, err := io.ReadFull(hc, got); err != nil || string(got) != "HTTP" {
		t.Fatalf("handed-off connection read %q, %v", got, err)
	}
}

// closeRecorder records each session's close reason.
func closeRecorder(hooks transport.Hooks) (transport.Hooks, chan transport.Reason) {
	reasons := make(chan transport.Reason, 8)
	hooks.OnClose = func(_ *transport.Session, err *transport.CloseError) { reasons <- err.Reason }
	return hooks, reasons
}

func waitReason(t *testing.T, reasons chan transport.Reason, want transport.Reason) {
	t.Helper()
	select {
	case r := <-reasons:
		if r != want {
			t.Fatalf("closed with %v, want %v", r, want)
		}
	case <-time.After(20 * time.Second): // generous: the sweep runs each second
		t.Fatalf("not closed (want %v)", want)
	}
}

func TestParkedSessionEnds(t *testing.T) {
	leakcheck.Check(t)
	cases := []struct {
		name string
		cfg  func(*transport.Config)
		end  func(srv *transport.Server, c net.Conn)
		want transport.Reason
	}{
		{"peer closes", nil, func(_ *transport.Server, c net.Conn) { c.Close() }, transport.ReasonPeerClosed},
		{"server closes it", nil, func(srv *transport.Server, _ net.Conn) {
			srv.Range(func(s *transport.Session) bool { s.Close(); return true })
		}, transport.ReasonLocal},
		{"server closes", nil, func(srv *transport.Server, _ net.Conn) { srv.Close() }, transport.ReasonShutdown},
		{"server shuts down", nil, func(srv *transport.Server, _ net.Conn) {
			if err := srv.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		}, transport.ReasonShutdown},
		{"close after writes", nil, func(srv *transport.Server, _ net.Conn) {
			srv.Range(func(s *transport.Session) bool { s.CloseAfterWrites(); return true })
		}, transport.ReasonLocal},
		{"idle timeout", func(c *transport.Config) { c.IdleTimeout = 300 * time.Millisecond }, nil, transport.ReasonIdle},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := parkConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			hooks, reasons := closeRecorder(echoHooks())
			srv, a := startServer(t, cfg, hooks, "tcp", "127.0.0.1:0")
			c := dial(t, "tcp", a)
			roundTrip(t, c, "hi")
			waitUntil(t, "the session to park", func() bool { return srv.Stats().Parked == 1 || srv.Stats().Active == 0 })
			if tc.end != nil {
				tc.end(srv, c)
			}
			waitReason(t, reasons, tc.want)
		})
	}
}

func TestParkedSessionMeetsItsFirstByteTimeout(t *testing.T) {
	leakcheck.Check(t)
	hooks, reasons := closeRecorder(echoHooks())
	cfg := parkConfig()
	cfg.FirstByteTimeout = 300 * time.Millisecond
	_, a := startServer(t, cfg, hooks, "tcp", "127.0.0.1:0")
	dial(t, "tcp", a)
	waitReason(t, reasons, transport.ReasonFirstByte)
}

// TestParkingKeepsEachSessionsBytesInOrder runs sessions that park after
// almost every read (ParkAfter 1 ns) while their peers write in bursts
// with pauses: every byte comes back, in order, and no receive of a
// session overlaps another of the same session.
func TestParkingKeepsEachSessionsBytesInOrder(t *testing.T) {
	leakcheck.Check(t)
	var mu sync.Mutex
	inside := map[*transport.Session]bool{}
	hooks := transport.Hooks{OnReceive: func(s *transport.Session, p *packet.Packet) {
		mu.Lock()
		if inside[s] {
			mu.Unlock()
			panic("two receives of one session at once")
		}
		inside[s] = true
		mu.Unlock()
		runtime.Gosched()
		s.Send(p.Share())
		mu.Lock()
		inside[s] = false
		mu.Unlock()
	}}
	srv, a := startServer(t, transport.Config{ParkAfter: time.Nanosecond}, hooks, "tcp", "127.0.0.1:0")
	const conns, rounds = 16, 40
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", a.String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			var sent, got bytes.Buffer
			buf := make([]byte, 4096)
			for r := range rounds {
				msg := fmt.Appendf(nil, "c%d r%d;", i, r)
				sent.Write(msg)
				if _, err := c.Write(msg); err != nil {
					t.Error(err)
					return
				}
				for got.Len() < sent.Len() {
					n, err := c.Read(buf)
					if err != nil {
						t.Error(err)
						return
					}
					got.Write(buf[:n])
				}
				if r%8 == 0 {
					time.Sleep(2 * time.Millisecond)
				}
			}
			if !bytes.Equal(got.Bytes(), sent.Bytes()) {
				t.Errorf("conn %d: echoed %q, sent %q", i, got.Bytes(), sent.Bytes())
			}
		}()
	}
	wg.Wait()
	st := srv.Stats()
	for r, n := range st.Closed {
		if n != 0 && transport.Reason(r) != transport.ReasonPeerClosed {
			t.Fatalf("%d sessions closed with %v: only the peers end them", n, transport.Reason(r))
		}
	}
}

// The poller lasts as long as sessions that parked: once they have all
// ended, a running server holds no goroutine for it (nor its descriptor),
// and the next session to park makes a new one.
func TestPollerEndsWithItsLastSession(t *testing.T) {
	leakcheck.Check(t)
	srv, a := startServer(t, parkConfig(), echoHooks(), "tcp", "127.0.0.1:0")
	base := runtime.NumGoroutine()
	for round := range 2 {
		c, err := net.Dial("tcp", a.String())
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c, fmt.Sprintf("round %d", round))
		waitUntil(t, "the session to park", func() bool { return srv.Stats().Parked == 1 })
		c.Close()
		waitUntil(t, "the session to end", func() bool { return srv.Stats().Active == 0 })
		waitUntil(t, "the poller and workers to end", func() bool { return runtime.NumGoroutine() <= base })
	}
}

// A server's new connection waits for its first bytes with no goroutine:
// it parks at once (whatever ParkAfter), reads its first message without
// waiting and parks again; only a connection that sends again within
// ParkAfter keeps its goroutine between reads.
func TestNewSessionParksAtOnce(t *testing.T) {
	leakcheck.Check(t)
	for _, routed := range []bool{false, true} {
		t.Run(fmt.Sprintf("routed=%v", routed), func(t *testing.T) {
			hooks := echoHooks()
			if routed {
				hooks.Route = func([]byte, bool) transport.Route { return transport.RouteServe }
				hooks.HandOff = func(c *transport.HandedConn) { c.Close() }
			}
			srv, a := startServer(t, transport.Config{ParkAfter: time.Hour}, hooks, "tcp", "127.0.0.1:0")
			c := dial(t, "tcp", a)
			waitUntil(t, "the silent connection to park", func() bool { return srv.Stats().Parked == 1 })
			roundTrip(t, c, "first")
			waitUntil(t, "the session to park after its first message", func() bool { return srv.Stats().Parked == 1 })
			roundTrip(t, c, "second") // within ParkAfter of the first: the session keeps its goroutine
			if st := srv.Stats(); st.Parked != 0 || st.Active != 1 {
				t.Fatalf("after a second message within ParkAfter: %d parked, %d active; want 0 and 1", st.Parked, st.Active)
			}
		})
	}
}

// Workers a burst of wakes started end once the wakes that follow are
// few: the worker that waited last serves the next wake, and the others
// time out.
func TestSurplusWorkersEnd(t *testing.T) {
	leakcheck.Check(t)
	const conns = 64
	srv, a := startServer(t, parkConfig(), echoHooks(), "tcp", "127.0.0.1:0")
	base := runtime.NumGoroutine()
	cs := make([]net.Conn, conns)
	for i := range cs {
		cs[i] = dial(t, "tcp", a)
	}
	waitUntil(t, "every connection to park", func() bool { return srv.Stats().Parked == conns })
	var wg sync.WaitGroup
	for i, c := range cs { // a burst: many wakes at once start many workers
		wg.Go(func() { roundTrip(t, c, fmt.Sprintf("burst %d", i)) })
	}
	wg.Wait()
	// One quiet wake every 30 ms (more often than a worker's idle limit
	// divided by conns): were the waiting workers served in turn, none
	// would wait long enough to end.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; runtime.NumGoroutine() > base+3; i++ { // the poller and a worker or two
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after 20 s of single wakes, want at most %d", runtime.NumGoroutine(), base+3)
		}
		time.Sleep(30 * time.Millisecond)
		roundTrip(t, cs[i%conns], "ping")
	}
}
