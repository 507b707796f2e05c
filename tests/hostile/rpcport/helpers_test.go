package rpcport_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/internal/testutil/oneport"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/rpc"
)

// patience bounds every wait for something a passing test gets: generous,
// since the machine is shared and the race detector is slow. A passing
// test never waits it out.
const patience = 30 * time.Second

// SRMP first bytes of RPC messages (flag 1).
const (
	b0Request = 0x01
	b0OneWay  = 0x41
	b0Reply   = 0x81
	b0Error   = 0xC1
)

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startPort starts the port the way `lifenet serve` does: an rpc.Server
// with cfg (defaults but for its log, unless cfg sets one) serving SRMP,
// HTTP and WebSocket on one loopback TCP port, NewLife's benchmark actions
// run inline on the reading goroutines (rpcbench.RegisterBench), and
// setup's actions. It closes the server when the test ends.
func startPort(t testing.TB, cfg rpc.Config, setup func(*rpc.Server)) (*rpc.Server, string) {
	t.Helper()
	srv := newPort(t, cfg, setup)
	t.Cleanup(func() { srv.Close() })
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return srv, a.String()
}

// startPortUDP is startPort serving UDP too, on the same port (drawn by
// oneport).
func startPortUDP(t testing.TB, cfg rpc.Config, setup func(*rpc.Server)) (*rpc.Server, string) {
	t.Helper()
	return oneport.Serve(t, func() *rpc.Server { return newPort(t, cfg, setup) }, "tcp", "udp")
}

// newPort is the server startPort listens with.
func newPort(t testing.TB, cfg rpc.Config, setup func(*rpc.Server)) *rpc.Server {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = quietLog()
	}
	srv, err := rpc.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rpcbench.RegisterBench(srv, true); err != nil {
		srv.Close()
		t.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	return srv
}

// handle is rpc.Handle that fails the test on error.
func handle[A, R any](t testing.TB, srv *rpc.Server, name string, fn func(context.Context, A) (R, error), opts ...rpc.HandleOption) {
	t.Helper()
	if err := rpc.Handle(srv, name, fn, opts...); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, patience, what, cond)
}

// raw is a plain TCP connection to the port, for hand-made bytes. Its
// methods return errors rather than failing the test: the server is
// expected to end many of these connections.
type raw struct {
	c net.Conn
	r *bufio.Reader
}

// tryDialRaw opens a raw connection that the caller closes.
func tryDialRaw(addr string) (*raw, error) {
	c, err := net.DialTimeout("tcp", addr, patience)
	if err != nil {
		return nil, err
	}
	return &raw{c: c, r: bufio.NewReader(c)}, nil
}

func (rc *raw) Close() error { return rc.c.Close() }

// write writes b whole, within patience.
func (rc *raw) write(b []byte) error {
	rc.c.SetWriteDeadline(time.Now().Add(patience))
	_, err := rc.c.Write(b)
	return err
}

// deadline sets the read deadline d from now.
func (rc *raw) deadline(d time.Duration) { rc.c.SetReadDeadline(time.Now().Add(d)) }

// frame is one SRMP frame.
type frame struct {
	b0, seq byte
	payload []byte
}

// readFrame reads one SRMP frame within patience.
func (rc *raw) readFrame() (frame, error) {
	rc.deadline(patience)
	return readSRMP(rc.r)
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

// readHTTP reads one HTTP response and its whole body within patience.
func (rc *raw) readHTTP() (*http.Response, string, error) { return rc.readHTTPWithin(patience) }

// readHTTPWithin reads one HTTP response and its whole body within wait.
func (rc *raw) readHTTPWithin(wait time.Duration) (*http.Response, string, error) {
	rc.deadline(wait)
	resp, err := http.ReadResponse(rc.r, nil)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// readRefusal reads the response that refuses a request the peer was
// still sending: a reset may cut its body (the server closes with the rest
// of the request unread, as net/http does), which is no error here.
func (rc *raw) readRefusal() (*http.Response, error) {
	resp, _, err := rc.readHTTP()
	if resp != nil && errors.Is(err, syscall.ECONNRESET) {
		err = nil
	}
	return resp, err
}

// errNoEnd is waitEnd's error when the server kept the connection open.
var errNoEnd = errors.New("the server did not end the connection")

// waitEnd reads until the server ends the connection (EOF or a reset) and
// returns how many bytes came before; errNoEnd after wait.
func (rc *raw) waitEnd(wait time.Duration) (int64, error) {
	rc.deadline(wait)
	n, err := io.Copy(io.Discard, rc.r)
	var ne net.Error
	switch {
	case err == nil:
		return n, nil
	case errors.As(err, &ne) && ne.Timeout():
		return n, errNoEnd
	}
	return n, nil // a reset: ended too
}

// srmpFrame builds an SRMP frame around payload: the 4-byte header, or the
// 8-byte one from 65,535 bytes on (as NewLife writes them).
func srmpFrame(b0, seq byte, payload []byte) []byte {
	if len(payload) < 0xFFFF {
		f := make([]byte, 4, 4+len(payload))
		f[0], f[1] = b0, seq
		binary.LittleEndian.PutUint16(f[2:], uint16(len(payload)))
		return append(f, payload...)
	}
	f := make([]byte, 8, 8+len(payload))
	f[0], f[1] = b0, seq
	binary.LittleEndian.PutUint16(f[2:], 0xFFFF)
	binary.LittleEndian.PutUint32(f[4:], uint32(len(payload)))
	return append(f, payload...)
}

// srmpHeader is the header alone of a frame whose payload is n bytes.
func srmpHeader(b0, seq byte, n int) []byte {
	f := srmpFrame(b0, seq, nil)
	if n < 0xFFFF {
		binary.LittleEndian.PutUint16(f[2:], uint16(n))
		return f
	}
	f = append(f, 0, 0, 0, 0)
	binary.LittleEndian.PutUint16(f[2:], 0xFFFF)
	binary.LittleEndian.PutUint32(f[4:], uint32(n))
	return f
}

// request is the body of a call of action with args (rpc.AppendRequest),
// failing the test on error.
func request(t testing.TB, action string, args any) []byte {
	t.Helper()
	b, err := rpc.AppendRequest(nil, action, args)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawBody builds a request body by hand: any name (rpc.AppendRequest
// refuses what NewLife cannot carry), then the data block.
func rawBody(name, data []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(name)))
	b = append(b, name...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// reply is a decoded reply body.
type reply struct {
	err    bool // an error reply
	action []byte
	code   int32
	data   []byte
}

// parseReply decodes the body of a reply frame.
func parseReply(f frame) (reply, error) {
	r := reply{err: f.b0 == b0Error}
	if f.b0 != b0Reply && f.b0 != b0Error {
		return r, fmt.Errorf("frame %02X is not a reply", f.b0)
	}
	b := f.payload
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return r, fmt.Errorf("reply with a bad name length")
	}
	r.action, b = b[k:k+int(n)], b[k+int(n):]
	if r.err {
		if len(b) < 4 {
			return r, fmt.Errorf("error reply without a code")
		}
		r.code, b = int32(binary.LittleEndian.Uint32(b)), b[4:]
	}
	if len(b) == 0 {
		return r, nil
	}
	if len(b) < 4 || int(binary.LittleEndian.Uint32(b)) != len(b)-4 {
		return r, fmt.Errorf("reply with a bad data block (%d bytes)", len(b))
	}
	r.data = b[4:]
	return r, nil
}

// call sends one request on rc and reads its reply.
func (rc *raw) call(t testing.TB, seq byte, body []byte) (reply, error) {
	t.Helper()
	if err := rc.write(srmpFrame(b0Request, seq, body)); err != nil {
		return reply{}, err
	}
	f, err := rc.readFrame()
	if err != nil {
		return reply{}, err
	}
	if f.seq != seq {
		return reply{}, fmt.Errorf("reply to sequence %d, want %d", f.seq, seq)
	}
	return parseReply(f)
}

// serves reports an error unless a call of Bench/NoArg on rc is answered
// 42: the connection is still served after what came before.
func (rc *raw) serves(t testing.TB) error {
	r, err := rc.call(t, 77, request(t, "Bench/NoArg", nil))
	if err != nil || r.err || string(r.data) != "42" {
		return fmt.Errorf("the connection's next call: %+v, %v; want 42", r, err)
	}
	return nil
}

// httpServes is serves for an HTTP connection.
func (rc *raw) httpServes() error {
	if err := rc.write([]byte(httpReq("GET", "/Bench/NoArg", nil, ""))); err != nil {
		return err
	}
	resp, body, err := rc.readHTTP()
	if err != nil || resp.StatusCode != 200 || body != envelope("Bench/NoArg", "42") {
		return fmt.Errorf("the connection's next call: %v %q, %v; want 42", resp, body, err)
	}
	return nil
}

// httpReq is an HTTP/1.1 request line and headers (Host included), the
// end of the head, and body.
func httpReq(method, target string, headers []string, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: rpcport\r\n", method, target)
	for _, h := range headers {
		b.WriteString(h)
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return b.String()
}

// envelope is the HTTP answer of a successful call returning the JSON
// value v.
func envelope(action, v string) string {
	return `{"action":"` + action + `","code":0,"data":` + v + `}`
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// mib formats a byte count in MiB.
func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
