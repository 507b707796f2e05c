package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/packet"
)

// Client defaults.
const (
	DefaultPullQueue      = 256                    // packets buffered for Receive / Packets
	DefaultReconnectDelay = 100 * time.Millisecond // first reconnect wait; doubles per failure
	DefaultReconnectMax   = 5 * time.Second        // NewLife ReconnectDelay: the cap of the wait
	DefaultMaxReconnect   = 20                     // attempts per outage
	// CopyThreshold is the frame-size policy of docs/perf/buffers.md, the
	// same as packet.Keep's: received data shorter than this is copied
	// into a fitted pooled buffer for pull mode, longer data is shared
	// with the receive buffer.
	CopyThreshold = packet.KeepCopyBelow
)

// ReceiveMode selects how a client delivers received bytes.
type ReceiveMode uint8

// Receive modes.
const (
	// ReceiveEvent calls Hooks.OnReceive on the receive goroutine.
	ReceiveEvent ReceiveMode = iota
	// ReceivePull queues owned packets for Receive (blocking pull) or
	// Packets (channel); a full queue stops reading from the socket, which
	// pushes back on the peer.
	ReceivePull
	// ReceiveSync has no receive goroutine: Receive reads the socket on the
	// caller's goroutine (NewLife's synchronous Receive), so a request/
	// response loop pays no goroutine hand-off per message. Nothing reads
	// while no Receive runs, so the end of the connection (OnClose, Done)
	// is noticed by the next Receive or by Close; it does not reconnect.
	ReceiveSync
)

// ClientConfig holds a client's settings: the connection settings of
// [Config] plus how to receive and reconnect. Zero fields take defaults.
type ClientConfig struct {
	Config
	// Mode selects event or pull delivery (default [ReceiveEvent]).
	Mode ReceiveMode
	// PullQueue is the number of packets buffered in pull mode (default 256).
	PullQueue int
	// DialTimeout bounds each connection attempt (default 3 s).
	DialTimeout time.Duration
	// AutoReconnect reconnects after the connection drops, waiting
	// ReconnectDelay, doubling per failure up to ReconnectMax, for at most
	// MaxReconnect attempts per outage (defaults 100 ms, 5 s, 20).
	AutoReconnect  bool
	ReconnectDelay time.Duration
	ReconnectMax   time.Duration
	MaxReconnect   int
	// LocalAddr binds the local end (UDP: a fixed local port, which makes
	// the client send with send-to instead of a connected socket).
	LocalAddr string
	// ReceiveTimeout bounds each Receive call in pull and sync modes, as
	// NewLife's ISocketClient.Timeout bounds its receives: a call that gets
	// nothing for this long returns [ErrReceiveTimeout] and the connection
	// stays open (0: only the context bounds the wait). Unlike a context
	// made for each call, it allocates nothing. In sync mode a call may
	// wait up to 1/32 of it more (the read deadline moves only when it is
	// nearer than the timeout, so that a serial caller's receives do not
	// each reset a timer). Event mode ignores it.
	ReceiveTimeout time.Duration
	// Upgrade, if set, runs on each new stream connection after its dial
	// (and TLS handshake), within DialTimeout, and returns the connection
	// the client then speaks through: a protocol that carries the client's
	// bytes inside its own (a WebSocket handshake, then its messages). An
	// error fails the dial, and the connection is closed.
	Upgrade func(ctx context.Context, c net.Conn) (net.Conn, error)
}

// DefaultClientConfig returns a [ClientConfig] with every field at its
// default; a zero ClientConfig means the same.
func DefaultClientConfig() ClientConfig {
	c, _ := ClientConfig{}.withDefaults()
	c.NoDelay = NoDelayDefault
	return c
}

// Validate reports a field out of range or a combination that cannot work.
func (c ClientConfig) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	switch {
	case c.PullQueue < 0:
		return fmt.Errorf("%w: PullQueue is %d", ErrConfig, c.PullQueue)
	case c.MaxReconnect < 0:
		return fmt.Errorf("%w: MaxReconnect is %d", ErrConfig, c.MaxReconnect)
	case c.ReceiveTimeout < 0:
		return fmt.Errorf("%w: ReceiveTimeout is %v", ErrConfig, c.ReceiveTimeout)
	case c.Mode > ReceiveSync:
		return fmt.Errorf("%w: unknown receive mode %d", ErrConfig, c.Mode)
	case c.Mode == ReceiveSync && c.AutoReconnect:
		return fmt.Errorf("%w: ReceiveSync does not reconnect (use ReceivePull with AutoReconnect)", ErrConfig)
	}
	return nil
}

func (c ClientConfig) withDefaults() (ClientConfig, error) {
	if err := c.Validate(); err != nil {
		return c, err
	}
	cfg, err := c.Config.withDefaults(false)
	if err != nil {
		return c, err
	}
	c.Config = cfg
	if c.PullQueue == 0 {
		c.PullQueue = DefaultPullQueue
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.ReconnectDelay <= 0 {
		c.ReconnectDelay = DefaultReconnectDelay
	}
	if c.ReconnectMax <= 0 {
		c.ReconnectMax = DefaultReconnectMax
	}
	if c.MaxReconnect == 0 {
		c.MaxReconnect = DefaultMaxReconnect
	}
	return c, nil
}

// Client is a TCP, TLS, Unix or UDP connection to a server with the same
// send API as a server session, optional auto-reconnect, and a choice of
// receive mode. All methods are safe for concurrent use.
type Client struct {
	ep      endpoint
	cfg     ClientConfig
	network string
	address string
	recv    chan *packet.Packet // pull mode
	sync    *syncReader         // sync mode

	mu sync.Mutex
	// sess is the current connection's session: replaced (under mu) on a
	// reconnect, read without a lock (a send loads it once).
	sess   atomic.Pointer[Session]
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
	nextID uint64
}

// Dial connects to address and starts receiving. network is "tcp",
// "tcp4", "tcp6", "unix", "udp", "udp4" or "udp6"; with cfg.TLS set, TCP
// connections use TLS. ctx bounds the first connection only.
func Dial(ctx context.Context, network, address string, cfg ClientConfig, hooks Hooks) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := hooks.validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, network: network, address: address, stop: make(chan struct{})}
	c.ep = endpoint{cfg: cfg.Config, hooks: hooks}
	c.ep.retire = c.retire
	c.ep.initLog()
	switch cfg.Mode {
	case ReceivePull:
		c.recv = make(chan *packet.Packet, cfg.PullQueue)
		c.ep.pull = c.enqueue
		c.ep.hooks.BatchSends = false // enqueue sends nothing, and may block
	case ReceiveSync:
		c.sync = &syncReader{} // Receive reads; nothing is delivered to hooks
		c.ep.selfRead = c.sync
		c.ep.hooks.BatchSends = false
	}
	acquireClock()
	sess, err := c.connect(ctx)
	if err != nil {
		releaseClock()
		return nil, err
	}
	c.sess.Store(sess)
	// Before Dial returns, so the handler and OnOpen's state are in place.
	if err := sess.openSafely(); err != nil {
		sess.closeWith(ReasonError, err)
		sess.finish()
		releaseClock()
		return nil, err
	}
	if c.sync != nil {
		return c, nil
	}
	c.wg.Add(1)
	go c.run(sess)
	return c, nil
}

// connect dials once and returns a new, not yet running session.
func (c *Client) connect(ctx context.Context) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	var (
		conn  net.Conn
		dgram sender // nil for a stream: its sender comes with its first send
		err   error
	)
	if strings.HasPrefix(c.network, "udp") {
		conn, dgram, err = c.dialUDP(ctx)
	} else {
		conn, err = c.dialStream(ctx)
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	c.ep.stats.opened()
	sess := newSession(&c.ep, id, conn, dgram)
	sess.keepStage = !sess.datagram // a client's stream keeps its written staging buffer for its next SendBytes
	return sess, nil
}

func (c *Client) dialStream(ctx context.Context) (net.Conn, error) {
	d := net.Dialer{KeepAlive: -1}
	if c.cfg.LocalAddr != "" {
		a, err := net.ResolveTCPAddr("tcp", c.cfg.LocalAddr)
		if err != nil {
			return nil, err
		}
		d.LocalAddr = a
	}
	conn, err := d.DialContext(ctx, c.network, c.address)
	if err != nil {
		return nil, err
	}
	tuneConn(conn, &c.cfg.Config)
	if c.cfg.TLS != nil && c.network != "unix" {
		tc := tls.Client(conn, c.cfg.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	if up := c.cfg.Upgrade; up != nil {
		uc, err := up(ctx, conn)
		if err != nil {
			conn.Close()
			return nil, err
		}
		conn = uc
	}
	return conn, nil
}

// dialUDP connects the socket to a unicast remote, so sends need no
// address (and allocate nothing); with a fixed local address, or to a
// broadcast or multicast remote, it binds and sends with send-to.
func (c *Client) dialUDP(ctx context.Context) (net.Conn, sender, error) {
	remote, err := net.ResolveUDPAddr(c.network, c.address)
	if err != nil {
		return nil, nil, err
	}
	ip := remote.AddrPort().Addr()
	if c.cfg.LocalAddr == "" && !ip.IsMulticast() && ip != netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, c.network, c.address)
		if err != nil {
			return nil, nil, err
		}
		return conn, newDatagramSender(conn.(*net.UDPConn), true, netip.AddrPort{}, conn.RemoteAddr()), nil
	}
	local, err := net.ResolveUDPAddr(c.network, c.cfg.LocalAddr)
	if err != nil {
		return nil, nil, err
	}
	conn, err := net.ListenUDP(c.network, local)
	if err != nil {
		return nil, nil, err
	}
	return &boundUDP{UDPConn: conn, remote: remote}, newDatagramSender(conn, false, remote.AddrPort(), remote), nil
}

// boundUDP is an unconnected UDP socket that reports the client's remote.
type boundUDP struct {
	*net.UDPConn
	remote *net.UDPAddr
}

func (b *boundUDP) RemoteAddr() net.Addr { return b.remote }

// run serves sessions until the client is closed or reconnecting gives up.
func (c *Client) run(sess *Session) {
	defer c.wg.Done()
	defer func() {
		if c.recv != nil {
			close(c.recv)
		}
	}()
	for sess != nil {
		sess.serveStream() // a client's session never parks
		sess = c.reconnect()
	}
}

// reconnect returns a new running session after an outage, or nil.
func (c *Client) reconnect() *Session {
	if !c.cfg.AutoReconnect {
		return nil
	}
	delay := c.cfg.ReconnectDelay
	for attempt := 1; attempt <= c.cfg.MaxReconnect; attempt++ {
		select {
		case <-c.stop:
			return nil
		case <-time.After(delay):
		}
		sess, err := c.connect(context.Background())
		if err == nil {
			c.mu.Lock()
			if c.closed {
				c.mu.Unlock()
				sess.closeWith(ReasonShutdown, nil)
				sess.finish()
				return nil
			}
			c.sess.Store(sess)
			c.mu.Unlock()
			return sess
		}
		delay = min(2*delay, c.cfg.ReconnectMax)
		c.logReconnect(attempt, err, delay)
	}
	return nil
}

// enqueue is the OnReceive of pull mode: small reads are copied into fitted
// buffers, large ones shared; a full queue blocks the receive loop.
func (c *Client) enqueue(s *Session, p *packet.Packet) {
	var q *packet.Packet
	if p.Len() < CopyThreshold {
		q = p.Clone()
	} else {
		q = p.Share()
	}
	select {
	case c.recv <- q:
	case <-c.stop:
		q.Release()
	}
}

// Receive returns the next received packet in pull or sync mode; the
// caller owns it and must release it. It fails with [ErrClosed] once the
// client is closed (or gave up reconnecting) and everything received was
// taken, with ctx's error, or with [ErrReceiveTimeout] after
// ClientConfig.ReceiveTimeout. In sync mode concurrent calls take turns.
func (c *Client) Receive(ctx context.Context) (*packet.Packet, error) {
	if c.sync != nil {
		return c.receiveSync(ctx, false)
	}
	if c.recv == nil {
		return nil, errors.New("transport: Receive needs ReceivePull or ReceiveSync mode")
	}
	var expired <-chan time.Time
	if d := c.cfg.ReceiveTimeout; d > 0 {
		t := takeTimer(d)
		defer timerPool.Put(t)
		defer t.Stop()
		expired = t.C
	}
	select {
	case p, ok := <-c.recv:
		if !ok {
			return nil, ErrClosed
		}
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-expired:
		return nil, ErrReceiveTimeout
	}
}

// timerPool keeps the timers of pull-mode receive timeouts, so that
// concurrent Receive calls each have one without allocating.
var timerPool sync.Pool

// takeTimer returns a pooled timer that fires after d.
func takeTimer(d time.Duration) *time.Timer {
	if t, ok := timerPool.Get().(*time.Timer); ok {
		t.Reset(d) // a stopped timer's channel holds no stale value (Go 1.23)
		return t
	}
	return time.NewTimer(d)
}

// Packets returns the pull-mode queue as a channel, closed when the client
// ends; each packet received from it is owned by the receiver. It is nil
// in event and sync modes.
func (c *Client) Packets() <-chan *packet.Packet { return c.recv }

// Session returns the current connection's session.
func (c *Client) Session() *Session { return c.sess.Load() }

// Send sends p on the current connection; see [Session.Send].
func (c *Client) Send(p *packet.Packet) error { return c.Session().Send(p) }

// Batch runs f with the current connection's writes held back; see
// [Session.Batch].
func (c *Client) Batch(f func()) error { return c.Session().Batch(f) }

// SendBytes copies parts and sends them as one message; see
// [Session.SendBytes].
func (c *Client) SendBytes(parts ...[]byte) error { return c.Session().SendBytes(parts...) }

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.ep.stats.snapshot()
	if s := c.sess.Load(); !s.has(flagRetired) {
		s.io.addTo(&st)
	}
	return st
}

// retire adds an ended session's traffic to the client's totals.
func (c *Client) retire(s *Session) {
	c.mu.Lock()
	c.ep.stats.retired.absorb(&s.io)
	s.flags.Or(flagRetired)
	c.mu.Unlock()
}

// Close closes the connection ([ReasonLocal]), stops reconnecting, waits for
// the receive goroutine, and releases packets nobody received. It is
// idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	sess := c.sess.Load()
	c.mu.Unlock()
	close(c.stop)
	if c.sync != nil {
		c.sync.close(sess)
	} else {
		sess.closeWith(ReasonLocal, nil)
	}
	c.wg.Wait()
	if c.recv != nil {
		for p := range c.recv {
			p.Release()
		}
	}
	c.ep.limits.Stop()
	releaseClock()
	return nil
}
