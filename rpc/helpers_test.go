package rpc_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/internal/testutil/oneport"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/rpc"
)

// Shared helpers of the package's black-box tests.

// SRMP first bytes of RPC messages (flag 1).
const (
	b0Request = 0x01
	b0OneWay  = 0x41
	b0Reply   = 0x81
	b0Error   = 0xC1

	b0StreamReply = 0xA1 // a stream's reply: flag 1 with the Streaming bit (0x20)
)

// testTimeout bounds every wait of the battery, so a broken server fails a
// test in seconds instead of hanging it.
const testTimeout = 5 * time.Second

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startServer checks the test for leaks, makes a server with cfg (logging
// nowhere unless cfg says otherwise), lets setup register actions, listens
// on 127.0.0.1:0 and closes the server when the test ends.
func startServer(t *testing.T, cfg rpc.Config, setup func(*rpc.Server)) (*rpc.Server, string) {
	t.Helper()
	leakcheck.Check(t)
	if cfg.Log == nil {
		cfg.Log = quietLog()
	}
	srv, err := rpc.NewServer(cfg)
	must(t, err)
	if setup != nil {
		setup(srv)
	}
	addr, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv, addr.String()
}

// startServerUDP is startServer serving UDP too, on the same port (drawn
// by oneport: a kernel-chosen TCP port may be taken for UDP).
func startServerUDP(t *testing.T, cfg rpc.Config, setup func(*rpc.Server)) (*rpc.Server, string) {
	t.Helper()
	leakcheck.Check(t)
	if cfg.Log == nil {
		cfg.Log = quietLog()
	}
	return oneport.Serve(t, func() *rpc.Server {
		srv, err := rpc.NewServer(cfg)
		must(t, err)
		if setup != nil {
			setup(srv)
		}
		return srv
	}, "tcp", "udp")
}

// stdActions registers the benchmark actions the vectors call (as
// vectors_test.go's benchServer does) on srv.
func stdActions(t testing.TB, srv *rpc.Server) {
	t.Helper()
	must(t, rpc.Handle(srv, "Bench/Add", func(_ context.Context, a addArgs) (int32, error) { return a.A + a.B, nil }))
	must(t, rpc.Handle(srv, "Bench/NoArg", func(context.Context, struct{}) (int32, error) { return 42, nil }))
	must(t, rpc.Handle(srv, "Bench/EchoPacket", func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
	must(t, rpc.Handle(srv, "Bench/EchoString", func(_ context.Context, s string) (string, error) { return s, nil }))
	must(t, rpc.Handle(srv, "Bench/Void", func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil }))
}

// dialClient dials addr with cfg (a short timeout unless cfg sets one) and
// closes the client when the test ends.
func dialClient(t *testing.T, addr string, cfg rpc.ClientConfig) *rpc.Client {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = testTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cl, err := rpc.Dial(ctx, addr, cfg)
	must(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// srmp builds an SRMP frame (short header) around payload.
func srmp(b0, seq byte, payload []byte) []byte {
	f := []byte{b0, seq, 0, 0}
	binary.LittleEndian.PutUint16(f[2:], uint16(len(payload)))
	return append(f, payload...)
}

// body is rpc.AppendRequest that fails the test on error. The body of a
// successful reply has the same form (name, then the data block).
func body(t testing.TB, action string, args any) []byte {
	t.Helper()
	b, err := rpc.AppendRequest(nil, action, args)
	must(t, err)
	return b
}

// errBody builds an error reply's body: name, code, message.
func errBody(action string, code int32, msg string) []byte {
	b := append([]byte{byte(len(action))}, action...)
	b = binary.LittleEndian.AppendUint32(b, uint32(code))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(msg)))
	return append(b, msg...)
}

// frame is one SRMP frame read from a raw connection.
type frame struct {
	b0, seq byte
	payload []byte
}

// rawConn is a plain connection to a server (TCP, or in memory), for
// writing hand-made bytes and reading what comes back.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	must(t, err)
	c.SetDeadline(time.Now().Add(testTimeout))
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

// dialMem is dialRaw over an in-memory connection to l (which a server
// serves). net.Pipe is unbuffered: a write returns once the server has
// read all of it, so a test reads each answer before its next write.
func dialMem(t *testing.T, l *memnet.Listener) *rawConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := l.Dial(ctx)
	must(t, err)
	c.SetDeadline(time.Now().Add(testTimeout))
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) write(b []byte) {
	rc.t.Helper()
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

// readFrame reads one SRMP frame.
func (rc *rawConn) readFrame() frame {
	rc.t.Helper()
	f, err := readSRMP(rc.r)
	if err != nil {
		rc.t.Fatalf("reading an SRMP frame: %v", err)
	}
	return f
}

func readSRMP(r io.Reader) (frame, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	n := int(binary.LittleEndian.Uint16(h[2:]))
	if n == 0xFFFF {
		var ext [4]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return frame{}, err
		}
		n = int(binary.LittleEndian.Uint32(ext[:]))
	}
	p := make([]byte, n)
	_, err := io.ReadFull(r, p)
	return frame{b0: h[0], seq: h[1], payload: p}, err
}

// expectEOF reads until the connection ends and fails if it does not end
// cleanly (or at all) before the deadline.
func (rc *rawConn) expectEOF() {
	rc.t.Helper()
	rest, err := io.ReadAll(rc.r)
	if err != nil {
		rc.t.Fatalf("connection did not end: %v (read %q)", err, rest)
	}
	if len(rest) > 0 {
		rc.t.Fatalf("unexpected bytes before the end: %q", rest)
	}
}

// refused reports whether the server answers the connection (a 503, a
// close frame) or ends it within d.
func (rc *rawConn) refused(d time.Duration) bool {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(d))
	defer rc.c.SetReadDeadline(time.Now().Add(testTimeout))
	_, err := rc.r.ReadByte()
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// waitFor polls cond (a condition, not a clock) until it holds or the
// test's patience ends.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, testTimeout, what, cond)
}

// recv receives from ch or fails the test after testTimeout.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return testwait.Recv(t, ch, testTimeout, what)
}

// apiCode returns the code of an *rpc.APIError in err, or -1.
func apiCode(err error) int {
	var ae *rpc.APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return -1
}

// gate is a handler's brake: calls entering it report on entered and wait
// until release is closed (or their connection ends).
type gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate(t *testing.T, buffer int) *gate {
	g := &gate{entered: make(chan struct{}, buffer), release: make(chan struct{})}
	t.Cleanup(g.open) // runs before the server's Close (cleanups are LIFO)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) wait(ctx context.Context) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fakeServer is a raw SRMP listener: it hands every request frame it gets
// to answer and writes back what answer returns (nothing for nil).
func fakeServer(t *testing.T, answer func(f frame) []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				c.Close()
				return
			}
			conns = append(conns, c)
			wg.Add(1)
			mu.Unlock()
			go func() {
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					f, err := readSRMP(r)
					if err != nil {
						return
					}
					if out := answer(f); out != nil {
						c.Write(out)
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// testCtx is a context ending after testTimeout, or with the test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
