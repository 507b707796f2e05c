package codec

import (
	"cmp"
	"context"
	"sync/atomic"

	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Client is a codec-level client: a transport client whose connection runs
// a pipeline, with requests and replies matched. All methods are safe for
// concurrent use; with AutoReconnect each new connection gets a new [Conn],
// and the calls go to the current one.
type Client struct {
	tc   *transport.Client
	conn atomic.Pointer[Conn]
}

// Dial connects like transport.Dial and runs opts.Pipeline on the
// connection. By default a receive goroutine reads (transport.ReceiveEvent;
// cfg.Mode ReceivePull is treated alike): replies, pushes and RequestAsync
// callbacks are handled whether or not anyone waits. With cfg.Mode
// transport.ReceiveSync there is no receive goroutine: the callers blocked
// in Request take turns reading the socket, which saves a goroutine
// hand-off per request; Options.Handler then runs only while some Request
// waits, on that caller's goroutine, and RequestAsync and RequestStream
// are refused, until Conn.StartReceiving gives the connection a receive
// goroutine.
func Dial(ctx context.Context, network, address string, cfg transport.ClientConfig, opts Options) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg.Log = cmp.Or(cfg.Log, opts.Log) // neither: the transport takes slog.Default()
	syncReads := cfg.Mode == transport.ReceiveSync
	if !syncReads {
		cfg.Mode = transport.ReceiveEvent
	}
	c := &Client{}
	h := transport.Hooks{
		// BatchSends stays off: a client's receive goroutine must keep
		// reading (see transport.Hooks).
		NewHandler: func(s *transport.Session) transport.SessionHandler {
			conn := newConn(s, &connSide{opts: opts}) // each connection its own (its read turn)
			c.conn.Store(conn)
			return (*sessionHandler)(conn)
		},
	}
	tc, err := transport.Dial(ctx, network, address, cfg, h)
	if err != nil {
		return nil, err
	}
	c.tc = tc
	if syncReads { // no reconnects in this mode: this is the only Conn
		conn := c.Conn()
		conn.side.lead = &lead{tc: tc, wake: make(chan struct{}, 1)}
		if m := conn.m.Load(); m != nil {
			m.setOnExpire(tc.Wake)
		}
	}
	return c, nil
}

// Conn returns the codec connection of the current transport connection.
func (c *Client) Conn() *Conn { return c.conn.Load() }

// Request sends an SRMP request on the current connection; see
// [Conn.Request].
func (c *Client) Request(ctx context.Context, m *Message) (*Message, error) {
	return c.Conn().Request(ctx, m)
}

// RequestBytes sends an SRMP request with a copy of payload on the current
// connection; see [Conn.RequestBytes].
func (c *Client) RequestBytes(ctx context.Context, flag uint8, payload []byte) (*Message, error) {
	return c.Conn().RequestBytes(ctx, flag, payload)
}

// RequestBytesAsync sends an SRMP request with a copy of payload on the
// current connection; see [Conn.RequestBytesAsync].
func (c *Client) RequestBytesAsync(ctx context.Context, flag uint8, payload []byte, cb func(*Message, error)) error {
	return c.Conn().RequestBytesAsync(ctx, flag, payload, cb)
}

// RequestPacket sends a length-field or delimiter request on the current
// connection; see [Conn.RequestPacket].
func (c *Client) RequestPacket(ctx context.Context, p *packet.Packet) (*packet.Packet, error) {
	return c.Conn().RequestPacket(ctx, p)
}

// RequestAsync sends an SRMP request on the current connection; see
// [Conn.RequestAsync].
func (c *Client) RequestAsync(ctx context.Context, m *Message, cb func(*Message, error)) error {
	return c.Conn().RequestAsync(ctx, m, cb)
}

// RequestPacketAsync sends a length-field or delimiter request on the
// current connection; see [Conn.RequestPacketAsync].
func (c *Client) RequestPacketAsync(ctx context.Context, p *packet.Packet, cb func(*packet.Packet, error)) error {
	return c.Conn().RequestPacketAsync(ctx, p, cb)
}

// Batch runs f with the current connection's writes held back; see
// [Conn.Batch].
func (c *Client) Batch(f func()) error { return c.Conn().Batch(f) }

// Write sends a one-way message on the current connection; see [Conn.Write].
func (c *Client) Write(msg any) error { return c.Conn().Write(msg) }

// Transport returns the underlying transport client.
func (c *Client) Transport() *transport.Client { return c.tc }

// Close closes the client; pending requests fail with ErrConnClosed.
func (c *Client) Close() error {
	if l := c.Conn().side.lead; l != nil { // ReceiveSync: not under a caller reading for the others
		return l.close()
	}
	return c.tc.Close()
}
