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
	cfg := r.cfg
	wctx, cancel := r.window(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Value
	for _, c := range clients {
		wg.Go(func() {
			var err error
			switch {
			case cfg.OneWay:
				err = r.codecOneway(wctx, c)
			case cfg.Mode == "roundtrip":
				err = r.codecSerial(wctx, c)
			default:
				err = r.codecWindow(wctx, c)
			}
			if err != nil {
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
func (r *run) codecSerial(ctx context.Context, c *codec.Client) error {
	h := hdrhistogram.New(1, 60_000_000, 3)
	defer func() {
		r.histMu.Lock()
		r.hist.Merge(h)
		r.histMu.Unlock()
	}()
	for ctx.Err() == nil {
		t0 := time.Now()
		var err error
		if r.cfg.Codec == "srmp" {
			var reply *codec.Message
			if reply, err = c.Request(ctx, newCodecRequest(r.cfg)); err == nil {
				reply.Release()
			}
		} else {
			var reply *packet.Packet
			if reply, err = c.RequestPacket(ctx, newCodecBody(r.cfg)); err == nil {
				reply.Release()
			}
		}
		if err != nil {
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

// codecWindow keeps --window requests in flight (default: the codec's
// limit) until the window ends, then waits for the outstanding replies.
func (r *run) codecWindow(ctx context.Context, c *codec.Client) error {
	window := r.cfg.Window
	if window <= 0 {
		window = codec.MaxInFlightSRMP
	}
	// Replies free slots on the receive goroutine; the requester takes all
	// the freed ones at once and sends them in one batch (one write), as
	// the raw client refills what one read answered in one write. The free
	// count is the only shared word per request: requests in flight are
	// window-free, so the end waits for free to come back to window.
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
	onMessage := func(_ *codec.Message, err error) { done(err) } // replies are borrowed: nothing to release
	onPacket := func(_ *packet.Packet, err error) { done(err) }
	conn := c.Conn()
	body := r.payload[:r.cfg.Size-codecHeader(r.cfg.Codec)]
	var err error
	size := uint64(r.cfg.Size)
	send := func(k int64) {
		var sent uint64
		defer func() { r.sent.Add(sent * size) }() // as it goes: the progress line reads it
		for ; k > 0 && err == nil; k-- {
			if r.cfg.Codec == "srmp" { // the []byte forms: no pooled message or packet per request
				err = conn.RequestBytesAsync(context.Background(), codec.FlagPacket, body, onMessage)
			} else {
				err = conn.RequestPacketAsync(context.Background(), packet.Wrap(body), onPacket)
			}
			if err != nil {
				free.Add(k) // this slot and the ones not used go back
				return
			}
			sent++
		}
	}
	for ctx.Err() == nil && err == nil {
		k := free.Swap(0)
		if k == 0 {
			select {
			case <-wake:
			case <-ctx.Done():
			}
			continue
		}
		conn.Batch(func() { send(k) })
	}
	for free.Load() < int64(window) { // every callback comes: a reply, a timeout or the connection's end
		<-drained
	}
	r.received.Add(received.Load() * size)
	if err != nil {
		return err
	}
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return nil
}
