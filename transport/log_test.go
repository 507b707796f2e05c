package transport_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/internal/logattr/logtest"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

const (
	msgOpened     = "transport: session opened"
	msgClosed     = "transport: session closed"
	msgRefused    = "transport: connection refused"
	msgPanic      = "transport: hook panicked"
	msgSuppressed = "transport: log lines suppressed"
)

// storm is how many hostile connections the storm tests make.
const storm = 1000

// wantSummary checks that rec holds exactly one summary of line, at level,
// counting n suppressed lines.
func wantSummary(t *testing.T, rec *logtest.Recorder, level slog.Level, line string, n uint64) {
	t.Helper()
	var got []uint64
	for _, r := range rec.Find(level, msgSuppressed) {
		if r.Attrs[logattr.Line].String() == line {
			got = append(got, r.Attrs[logattr.Suppressed].Uint64())
		}
	}
	if len(got) != 1 || got[0] != n {
		t.Fatalf("summaries of %q: %v, want one of %d", line, got, n)
	}
}

// A storm of connections refused at MaxConns writes the burst of Warn
// lines, the rest at Debug, and when the interval ends one Warn line
// counting those it held back: not a Warn line per hostile connection.
func TestLogRefusedStorm(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec, log := logtest.New(slog.LevelDebug)
		srv, err := transport.NewServer(transport.Config{MaxConns: 1, Log: log}, transport.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		l := memnet.Listen("transport")
		if err := srv.Serve(l); err != nil {
			t.Fatal(err)
		}
		held := dialMem(l)
		defer held.Close()
		synctest.Wait()
		for range storm {
			dialMem(l).Close()
		}
		synctest.Wait()
		if n := srv.Stats().Closed[transport.ReasonLimit]; n != storm {
			t.Fatalf("%d connections refused, want %d", n, storm)
		}
		warn := rec.Find(slog.LevelWarn, msgRefused)
		if len(warn) != logattr.Burst {
			t.Fatalf("%d Warn lines for %d refused connections, want the burst of %d", len(warn), storm, logattr.Burst)
		}
		for _, r := range warn {
			if r.Attrs[logattr.Limit].String() != "MaxConns" || !r.Has(logattr.Remote, logattr.Network, logattr.Local) {
				t.Fatalf("refused line %v", r.Attrs)
			}
		}
		if n := len(rec.Find(slog.LevelDebug, msgRefused)); n != storm-logattr.Burst {
			t.Fatalf("%d Debug lines, want the %d held back from Warn", n, storm-logattr.Burst)
		}
		if n := len(rec.Find(slog.LevelWarn, msgSuppressed)); n != 0 {
			t.Fatalf("%d summaries before the interval ended", n)
		}
		time.Sleep(logattr.Interval)
		synctest.Wait()
		wantSummary(t, rec, slog.LevelWarn, msgRefused, storm-logattr.Burst)
	})
}

// A storm of connections that never send, closed by FirstByteTimeout:
// the burst of Warn lines carrying the close's attributes, and the count
// of the rest reported when the server closes (before the interval ends).
// With the logger at Warn, the held-back lines cost nothing.
func TestLogFirstByteStorm(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec, log := logtest.New(slog.LevelWarn)
		cfg := transport.Config{FirstByteTimeout: 100 * time.Millisecond, Log: log}
		srv, err := transport.NewServer(cfg, transport.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		l := memnet.Listen("transport")
		if err := srv.Serve(l); err != nil {
			t.Fatal(err)
		}
		conns := make([]net.Conn, storm)
		for i := range conns {
			conns[i] = dialMem(l)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if n := srv.Stats().Closed[transport.ReasonFirstByte]; n != storm {
			t.Fatalf("%d first-byte closes, want %d", n, storm)
		}
		warn := rec.Find(slog.LevelWarn, msgClosed)
		if len(warn) != logattr.Burst {
			t.Fatalf("%d Warn lines for %d closes, want %d", len(warn), storm, logattr.Burst)
		}
		for _, r := range warn {
			if r.Attrs[logattr.Reason].String() != "first-byte timeout" ||
				!r.Has(logattr.Session, logattr.Remote, logattr.Network, logattr.Duration, logattr.BytesIn, logattr.BytesOut) {
				t.Fatalf("close line %v", r.Attrs)
			}
		}
		if n := len(rec.Records()); n != logattr.Burst {
			t.Fatalf("%d lines at Warn and above, want %d", n, logattr.Burst)
		}
		srv.Close()
		for _, c := range conns {
			c.Close()
		}
		wantSummary(t, rec, slog.LevelWarn, msgClosed, storm-logattr.Burst)
		if r := rec.Find(slog.LevelWarn, msgSuppressed)[0]; r.Attrs[logattr.Reason].String() != "first-byte timeout" {
			t.Fatalf("summary %v: no reason", r.Attrs)
		}
	})
}

// Each session's Debug lines, at open and close, carry the common
// attributes, on the server's and on the client's logger: the session's
// ID, the peer, the network, and at the close the reason, the duration
// and the bytes each way.
func TestLogSessionOpenClose(t *testing.T) {
	leakcheck.Check(t)
	srec, slog1 := logtest.New(slog.LevelDebug)
	srv, addr := startServer(t, transport.Config{Log: slog1}, echoHooks(), "tcp", "127.0.0.1:0")
	crec, clog := logtest.New(slog.LevelDebug)
	got := make(chan []byte, 1)
	cl, err := transport.Dial(context.Background(), "tcp", addr.String(), transport.ClientConfig{Config: transport.Config{Log: clog}},
		transport.Hooks{OnReceive: func(_ *transport.Session, p *packet.Packet) { got <- append([]byte(nil), p.Bytes()...) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.SendBytes([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "hello" {
		t.Fatalf("echo %q", b)
	}
	id := cl.Session().ID()
	cl.Close()
	testwait.For(t, 10*time.Second, "the server's close line", func() bool { return len(srec.Find(slog.LevelDebug, msgClosed)) == 1 })
	srv.Close()

	for _, side := range []struct {
		name   string
		rec    *logtest.Recorder
		reason string
		id     uint64
		remote string
	}{
		{"server", srec, "peer closed", 0, ""},
		{"client", crec, "local close", id, addr.String()},
	} {
		open, closed := side.rec.Find(slog.LevelDebug, msgOpened), side.rec.Find(slog.LevelDebug, msgClosed)
		if len(open) != 1 || len(closed) != 1 {
			t.Fatalf("%s: %d open and %d close lines, want 1 and 1", side.name, len(open), len(closed))
		}
		o, c := open[0], closed[0]
		if !o.Has(logattr.Session, logattr.Remote, logattr.Network, logattr.Local) {
			t.Errorf("%s: open line %v", side.name, o.Attrs)
		}
		if o.Attrs[logattr.Session].Uint64() != c.Attrs[logattr.Session].Uint64() ||
			side.id != 0 && o.Attrs[logattr.Session].Uint64() != side.id {
			t.Errorf("%s: session %v opened, %v closed, want %d", side.name, o.Attrs[logattr.Session], c.Attrs[logattr.Session], side.id)
		}
		if side.remote != "" && o.Attrs[logattr.Remote].String() != side.remote {
			t.Errorf("%s: remote %v, want %s", side.name, o.Attrs[logattr.Remote], side.remote)
		}
		if c.Attrs[logattr.Network].String() != "tcp" || c.Attrs[logattr.Reason].String() != side.reason ||
			c.Attrs[logattr.BytesIn].Uint64() != 5 || c.Attrs[logattr.BytesOut].Uint64() != 5 ||
			c.Attrs[logattr.Duration].Kind() != slog.KindDuration {
			t.Errorf("%s: close line %v, want tcp, %q, 5 bytes each way, a duration", side.name, c.Attrs, side.reason)
		}
	}
}

// A hook's panic is an Error line with the panic's value and its stack.
func TestLogHookPanic(t *testing.T) {
	leakcheck.Check(t)
	rec, log := logtest.New(slog.LevelInfo)
	srv, addr := startServer(t, transport.Config{Log: log}, transport.Hooks{
		OnReceive: func(*transport.Session, *packet.Packet) { panic("boom") },
	}, "tcp", "127.0.0.1:0")
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("x"))
	io.Copy(io.Discard, c) // until the server closes it
	testwait.For(t, 10*time.Second, "the panic's line", func() bool { return len(rec.Find(slog.LevelError, msgPanic)) == 1 })
	r := rec.Find(slog.LevelError, msgPanic)[0]
	if r.Attrs[logattr.Panic].String() != "boom" || !strings.Contains(r.Attrs[logattr.Stack].String(), "TestLogHookPanic") ||
		!r.Has(logattr.Session, logattr.Remote, logattr.Network) {
		t.Errorf("panic line %v", r.Attrs)
	}
	srv.Close()
	if n := len(rec.Records()); n != 1 {
		t.Errorf("%d lines at Info and above, want the panic's alone (its close is Debug)", n)
	}
}

// Without Config.Log the lines go to slog.Default() as it is when the
// server is made.
func TestLogDefault(t *testing.T) {
	leakcheck.Check(t)
	rec, log := logtest.New(slog.LevelError)
	old := slog.Default()
	slog.SetDefault(log)
	srv, err := transport.NewServer(transport.Config{}, transport.Hooks{
		OnReceive: func(*transport.Session, *packet.Packet) { panic("boom") },
	})
	slog.SetDefault(old)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addr, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("x"))
	testwait.For(t, 10*time.Second, "the panic's line", func() bool { return len(rec.Find(slog.LevelError, msgPanic)) == 1 })
}

// errListener fails its Accepts with errs, in order, then waits until it is
// closed.
type errListener struct {
	errs   chan error
	closed chan struct{}
}

func (l *errListener) Accept() (net.Conn, error) {
	select {
	case err := <-l.errs:
		return nil, err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *errListener) Close() error   { close(l.closed); return nil }
func (l *errListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9} }

// An accept that fails for want of descriptors is an Error line (the
// operator must raise the limit), one aborted by the peer a Warn line;
// both name the listener, the error and the wait before the retry, and
// OnError still sees them.
func TestLogAcceptFailures(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec, log := logtest.New(slog.LevelInfo)
		seen := make(chan error, 4)
		srv, err := transport.NewServer(transport.Config{Log: log}, transport.Hooks{OnError: func(err error) { seen <- err }})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		l := &errListener{errs: make(chan error, 4), closed: make(chan struct{})}
		l.errs <- &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
		l.errs <- &net.OpError{Op: "accept", Net: "tcp", Err: syscall.ECONNABORTED}
		if err := srv.Serve(l); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(seen) != 2 {
			t.Fatalf("OnError saw %d errors, want 2", len(seen))
		}
		for _, c := range []struct {
			level slog.Level
			errno syscall.Errno
		}{{slog.LevelError, syscall.EMFILE}, {slog.LevelWarn, syscall.ECONNABORTED}} {
			lines := rec.Find(c.level, "transport: accept failed")
			if len(lines) != 1 {
				t.Fatalf("%d %v accept lines, want 1 (for %v)", len(lines), c.level, c.errno)
			}
			a := lines[0].Attrs
			if !strings.Contains(a[logattr.Err].String(), c.errno.Error()) || a[logattr.Local].String() != "127.0.0.1:9" ||
				a[logattr.Retry].Duration() <= 0 {
				t.Errorf("%v accept line %v", c.level, a)
			}
		}
	})
}

// A client's failed reconnects are Debug lines, and giving up a Warn line.
func TestLogReconnectGaveUp(t *testing.T) {
	leakcheck.Check(t)
	srv, addr := startServer(t, transport.Config{}, transport.Hooks{}, "tcp", "127.0.0.1:0")
	rec, log := logtest.New(slog.LevelDebug)
	cl, err := transport.Dial(context.Background(), "tcp", addr.String(), transport.ClientConfig{
		Config: transport.Config{Log: log}, AutoReconnect: true, MaxReconnect: 2, ReconnectDelay: time.Millisecond,
	}, transport.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	srv.Close() // the client's connection ends, and nothing listens
	testwait.For(t, 10*time.Second, "the client giving up", func() bool { return len(rec.Find(slog.LevelWarn, "transport: reconnecting gave up")) == 1 })
	failed := rec.Find(slog.LevelDebug, "transport: reconnect failed")
	if len(failed) != 1 || failed[0].Attrs[logattr.Attempt].Int64() != 1 || failed[0].Attrs[logattr.Remote].String() != addr.String() {
		t.Fatalf("reconnect lines %v, want attempt 1 to %s", failed, addr)
	}
	if g := rec.Find(slog.LevelWarn, "transport: reconnecting gave up")[0]; g.Attrs[logattr.Attempt].Int64() != 2 || !g.Has(logattr.Err) {
		t.Fatalf("gave-up line %v", g.Attrs)
	}
}
