package loadtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Codec runs (--codec srmp|lengthfield with --impl lifenet): every message
// is one frame of --size bytes (header included) through lifenet's codec on
// both ends over TCP; the server replies to each request (or only counts,
// with --oneway), and the client matches each reply to its request. Over
// UDP the server is the same codec server (one or more whole frames per
// datagram, a reply datagram each) and the client the raw one (rawClient).

// codecHeader is the frame header length of each codec.
func codecHeader(name string) int {
	if name == "srmp" {
		return 4
	}
	return 2
}

func codecPipeline(name string) *codec.Pipeline {
	if name == "srmp" {
		return codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}))
	}
	return codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{}, codec.FramerConfig{}))
}

// startCodecServer serves the codec: replies carry the request's payload.
// The handler counts nothing: the transport already counts each session's
// bytes on its own counter, which the sampler sums once a second.
func startCodecServer(cfg *Config, addr string) (*echoServer, error) {
	handler := func(c *codec.Conn, msg any) {
		if cfg.OneWay {
			return
		}
		switch m := msg.(type) {
		case *codec.Message:
			if m.Kind == codec.KindRequest {
				c.Reply(m, m.Payload)
			}
		case *packet.Packet:
			c.Write(m)
		}
	}
	srv, err := codec.NewServer(loadServerConfig(cfg), codec.Options{Pipeline: codecPipeline(cfg.Codec), Handler: handler})
	if err != nil {
		return nil, err
	}
	return listenLifenet(cfg, addr, srv.Transport())
}

// newCodecRequest builds one SRMP request of the configured frame size.
func newCodecRequest(cfg *Config) *codec.Message {
	kind := codec.KindRequest
	if cfg.OneWay {
		kind = codec.KindOneWay
	}
	return codec.NewMessage(kind, codec.FlagPacket, 0, newCodecBody(cfg))
}

// newCodecBody builds one request payload of the configured frame size.
func newCodecBody(cfg *Config) *packet.Packet {
	return packet.GetWithHeadroom(8, cfg.Size-codecHeader(cfg.Codec))
}

// dialCodec connects the codec clients (before the measurement starts).
func (r *run) dialCodec(ctx context.Context) ([]*codec.Client, error) {
	cfg := r.cfg
	ccfg := transport.ClientConfig{Config: transport.Config{SocketReceiveBuffer: cfg.RcvBuf}}
	if cfg.Mode == "roundtrip" && cfg.RecvMode == "sync" {
		ccfg.Mode = transport.ReceiveSync // the waiting request reads; windowed runs need the receive goroutine
	}
	clients := make([]*codec.Client, cfg.Clients)
	for i := range clients {
		c, err := codec.Dial(ctx, cfg.protocol(), r.addr, ccfg, codec.Options{Pipeline: codecPipeline(cfg.Codec)})
		if err != nil {
			closeCodec(clients[:i])
			return nil, fmt.Errorf("connect to %s: %w", r.addr, err)
		}
		clients[i] = c
	}
	return clients, nil
}

func closeCodec(clients []*codec.Client) {
	for _, c := range clients {
		c.Close()
	}
}

// runCodec drives the codec clients for the window and fills r's counters
// and histogram.
func (r *run) runCodec(ctx context.Context, clients []*codec.Client) error {
	return r.eachConn(ctx, len(clients), func(wctx context.Context, i int) error {
		c := clients[i]
		switch {
		case r.cfg.OneWay:
			return r.codecOneway(wctx, c)
		case r.cfg.Mode == "roundtrip":
			return r.codecSerial(wctx, c)
		}
		return r.codecWindow(wctx, c)
	})
}

// eachConn runs f for connections 0…n-1 at once within the window and
// returns the first error.
func (r *run) eachConn(ctx context.Context, n int, f func(wctx context.Context, i int) error) error {
	wctx, cancel := r.window(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Value
	for i := range n {
		wg.Go(func() {
			if err := f(wctx, i); err != nil {
				failed.CompareAndSwap(nil, err)
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return nil
}

func (r *run) codecOneway(ctx context.Context, c *codec.Client) error {
	for ctx.Err() == nil {
		var msg any = newCodecBody(r.cfg)
		if r.cfg.Codec == "srmp" {
			msg = newCodecRequest(r.cfg)
		}
		if err := c.Write(msg); err != nil {
			return err
		}
		r.sent.Add(uint64(r.cfg.Size))
	}
	return nil
}

// codecSerial: one request in flight per connection, latency recorded.
// As the baseline's serial caller does, the request is the run's payload
// (no pooled packet per request) and the reply is borrowed, not copied
// (RequestBytesInto, RequestPacketInto).
func (r *run) codecSerial(ctx context.Context, c *codec.Client) error {
	body := r.payload[:r.cfg.Size-codecHeader(r.cfg.Codec)]
	return r.serialCalls(ctx, func() error {
		if r.cfg.Codec == "srmp" {
			_, err := c.Conn().RequestBytesInto(ctx, codec.FlagPacket, body, 0, ignoreReply, nil)
			return err
		}
		_, err := c.Conn().RequestPacketInto(ctx, packet.Wrap(body), ignorePacket, nil)
		return err
	})
}

// ignoreReply and ignorePacket are the serial caller's use of its reply:
// it only needs it to have come.
func ignoreReply(any, *codec.Message) error { return nil }

func ignorePacket(any, *packet.Packet) error { return nil }

// serialCalls makes one connection's calls, one at a time, until the
// window ends, recording each one's latency: the serial loop of lifenet's
// codec client and of the baseline's alike. A call the window's end cuts
// short counts as sent, unanswered.
func (r *run) serialCalls(ctx context.Context, call func() error) error {
	h := hdrhistogram.New(1, 60_000_000, 3)
	defer func() {
		r.histMu.Lock()
		r.hist.Merge(h)
		r.histMu.Unlock()
	}()
	for ctx.Err() == nil {
		t0 := time.Now()
		if err := call(); err != nil {
			if over(ctx) {
				r.sent.Add(uint64(r.cfg.Size)) // the window closed while it was in flight
				return nil
			}
			return err
		}
		r.sent.Add(uint64(r.cfg.Size))
		h.RecordValue(max(time.Since(t0).Microseconds(), 1))
	}
	return nil
}

// codecWindowSize is how many requests a windowed codec run keeps in
// flight per connection: --window, or SRMP's limit (for either codec, and
// for lifenet's client and the baseline's alike).
func codecWindowSize(cfg *Config) int {
	if cfg.Window > 0 {
		return cfg.Window
	}
	return codec.MaxInFlightSRMP
}

// codecWindow keeps the window of requests in flight on lifenet's codec
// client (keepWindow).
func (r *run) codecWindow(ctx context.Context, c *codec.Client) error {
	return r.keepWindow(ctx, codecWindowSize(r.cfg), func(done func(error)) windowClient {
		return &lifenetWindow{conn: c.Conn(), close: func() { c.Close() }, srmp: r.cfg.Codec == "srmp",
			onMessage: func(_ *codec.Message, err error) { done(err) }, // replies are borrowed: nothing to release
			onPacket:  func(_ *packet.Packet, err error) { done(err) }}
	})
}

// windowClient is one connection's codec client as keepWindow drives it:
// lifenet's (lifenetWindow) or the baseline's (baselineWindow).
type windowClient interface {
	// send sends a request carrying body. Unless it fails, the request's
	// reply or failure calls the done function the client was made with,
	// once, on another goroutine.
	send(body []byte) error
	// batch runs f; the requests f sends leave in one write.
	batch(f func()) error
	// abort ends the connection: every request in flight fails.
	abort()
}

// lifenetWindow is lifenet's codec client under keepWindow: the []byte
// forms of its asynchronous requests (no pooled message or packet per
// request), each reply matched to its request by the connection's
// matcher and handed to the callback.
type lifenetWindow struct {
	conn      *codec.Conn
	close     func()
	srmp      bool
	onMessage func(*codec.Message, error)
	onPacket  func(*packet.Packet, error)
}

func (l *lifenetWindow) send(body []byte) error {
	if l.srmp {
		return l.conn.RequestBytesAsync(context.Background(), codec.FlagPacket, body, l.onMessage)
	}
	return l.conn.RequestPacketAsync(context.Background(), packet.Wrap(body), l.onPacket)
}

// batch ignores Batch's error: a request that did not leave fails through
// its callback.
func (l *lifenetWindow) batch(f func()) error {
	l.conn.Batch(f)
	return nil
}

func (l *lifenetWindow) abort() { l.close() }

// keepWindow keeps window requests in flight on one connection until ctx
// ends, then waits for the outstanding replies: up to drainPatience, after
// which it ends the connection (every request still in flight then fails
// through its callback) and reports the stall.
func (r *run) keepWindow(ctx context.Context, window int, open func(done func(error)) windowClient) error {
	// Replies free slots on the receiving goroutine; the requester takes all
	// the freed ones at once and sends them in one batch (one write), as
	// the counting raw client refills what one read answered in one write.
	// The free count is the only shared word per request: requests in
	// flight are window-free, so the end waits for free to come back to
	// window.
	var free atomic.Int64
	free.Store(int64(window))
	wake := make(chan struct{}, 1)
	drained := make(chan struct{}, 1)
	var failed atomic.Value
	var received atomic.Uint64 // this connection's, summed into the run's once at the end
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	done := func(err error) {
		if err != nil {
			failed.CompareAndSwap(nil, err)
		} else {
			received.Add(1)
		}
		n := free.Add(1)
		if n == 1 {
			signal(wake)
		}
		if n == int64(window) {
			signal(drained)
		}
	}
	c := open(done)
	body := r.payload[:r.cfg.Size-codecHeader(r.cfg.Codec)]
	var err error
	size := uint64(r.cfg.Size)
	send := func(k int64) {
		var sent uint64
		defer func() { r.sent.Add(sent * size) }() // as it goes: the progress line reads it
		for ; k > 0 && err == nil; k-- {
			if err = c.send(body); err != nil {
				free.Add(k) // this slot and the ones not used go back
				return
			}
			sent++
		}
	}
	for ctx.Err() == nil && err == nil && failed.Load() == nil { // a failed request ends the run: the connection is of no more use
		k := free.Swap(0)
		if k == 0 {
			select {
			case <-wake:
			case <-ctx.Done():
			}
			continue
		}
		if berr := c.batch(func() { send(k) }); err == nil {
			err = berr
		}
	}
	patience := time.NewTimer(drainPatience)
	defer patience.Stop()
	var stalled error
	for free.Load() < int64(window) { // every callback comes: a reply, a failure, or the connection's end
		select {
		case <-drained:
		case <-patience.C:
			stalled = fmt.Errorf("drain: %d replies missing after %v; connection closed", int64(window)-free.Load(), drainPatience)
			c.abort()
		}
	}
	r.received.Add(received.Load() * size)
	switch {
	case err != nil:
		return err
	case stalled != nil:
		return stalled
	}
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return nil
}
