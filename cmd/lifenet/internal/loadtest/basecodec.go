package loadtest

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/lifenet/lifenet/internal/baseline"
)

// The baseline's codec caller (--impl raw with a TCP codec, requests
// answered): baseline.Client on a plain net.Conn, doing per request what
// lifenet's codec client does and a caller needs. Windowed (pipeline
// mode), a goroutine per connection reads the replies, matches each to its
// request (by sequence number for SRMP, by order for the length field)
// and calls its callback, while the window driver (keepWindow, the same as
// lifenet's) keeps --window requests in flight, each batch of them one
// write. Serial (round trips), the caller writes one request and reads
// until its reply has come. A reply that matches no request in flight
// ends the connection, and the run fails with baseline.ErrUnmatched.

// dialBaselineCodec connects the baseline's codec clients (before the
// measurement starts).
func (r *run) dialBaselineCodec(ctx context.Context) ([]net.Conn, error) {
	conns := make([]net.Conn, r.cfg.Clients)
	var d net.Dialer
	for i := range conns {
		c, err := d.DialContext(ctx, "tcp", r.addr)
		if err != nil {
			closeConns(conns[:i])
			return nil, fmt.Errorf("connect to %s: %w", r.addr, err)
		}
		if r.cfg.RcvBuf > 0 {
			c.(*net.TCPConn).SetReadBuffer(r.cfg.RcvBuf)
		}
		conns[i] = c
	}
	return conns, nil
}

func closeConns(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// runBaselineCodec drives the baseline's codec clients for the window and
// fills r's counters and histogram.
func (r *run) runBaselineCodec(ctx context.Context, conns []net.Conn) error {
	f, err := baseline.ParseFormat(r.cfg.Codec)
	if err != nil {
		return err
	}
	var readers sync.WaitGroup
	defer readers.Wait()
	defer closeConns(conns) // ends the readers
	return r.eachConn(ctx, len(conns), func(wctx context.Context, i int) error {
		conn := conns[i]
		c, err := baseline.NewClient(conn, f)
		if err != nil {
			return err
		}
		if r.cfg.Mode == "roundtrip" {
			if d, ok := wctx.Deadline(); ok {
				conn.SetReadDeadline(d) // a reply still owed when the window ends is cut off there
			}
			body := r.payload[:r.cfg.Size-codecHeader(r.cfg.Codec)]
			return r.serialCalls(wctx, func() error {
				_, err := c.Call(codecFlag, body)
				return err
			})
		}
		readers.Go(func() { c.Receive() }) // its error reaches every request in flight's callback
		return r.keepWindow(wctx, codecWindowSize(r.cfg), func(done func(error)) windowClient {
			return &baselineWindow{c: c, conn: conn, cb: func(_ []byte, err error) { done(err) }}
		})
	})
}

// codecFlag is the SRMP flag of the load's requests: a packet payload, as
// lifenet's client sends them (codec.FlagPacket).
const codecFlag = 1

// baselineWindow is the baseline's codec client under keepWindow.
type baselineWindow struct {
	c    *baseline.Client
	conn net.Conn
	cb   baseline.Callback // every request's: the reply's payload is not needed, only that it came
}

func (b *baselineWindow) send(body []byte) error { return b.c.Send(codecFlag, body, b.cb) }

func (b *baselineWindow) batch(f func()) error {
	f()
	return b.c.Flush()
}

func (b *baselineWindow) abort() { b.conn.Close() }
