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
// both ends; the server replies to each request (or only counts, with
// --oneway), and the client matches each reply to its request.

// codecHeader is the frame header length of each codec.
func codecHeader(name string) int {
	if name == "srmp" {
		return 4
	}
	return 2
}

func codecPipeline(name string) *codec.Pipeline {
	if name == "srmp" {
		return codec.NewPipeline(codec.SRMP(codec.FramerConfig{}))
	}
	return codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{}, codec.FramerConfig{}))
}

// startCodecServer serves the codec: replies carry the request's payload.
func startCodecServer(cfg *Config, addr string) (*echoServer, error) {
	var n atomic.Uint64
	frame := uint64(cfg.Size)
	handler := func(c *codec.Conn, msg any) {
		n.Add(frame)
		switch m := msg.(type) {
		case *codec.Message:
			if cfg.OneWay || m.Kind != codec.KindRequest {
				m.Release()
				return
			}
			p := m.Payload
			m.Payload = nil
			c.Reply(m, p)
			m.Release()
		case *packet.Packet:
			if cfg.OneWay {
				m.Release()
				return
			}
			c.Write(m)
		}
	}
	return serveLifenet(cfg, addr, codec.Hooks(codec.Options{Pipeline: codecPipeline(cfg.Codec), Handler: handler}), n.Load)
}

// newCodecMessage builds one request of the configured frame size.
func newCodecMessage(cfg *Config) any {
	body := packet.GetWithHeadroom(8, cfg.Size-codecHeader(cfg.Codec))
	if cfg.Codec == "srmp" {
		kind := codec.KindRequest
		if cfg.OneWay {
			kind = codec.KindOneWay
		}
		return codec.NewMessage(kind, codec.FlagPacket, 0, body)
	}
	return body
}

func releaseReply(r any) {
	switch v := r.(type) {
	case *codec.Message:
		v.Release()
	case *packet.Packet:
		v.Release()
	}
}

// dialCodec connects the codec clients (before the measurement starts).
func (r *run) dialCodec(ctx context.Context) ([]*codec.Client, error) {
	cfg := r.cfg
	match := codec.MatchSRMP
	if cfg.Codec != "srmp" {
		match = codec.MatchFIFO
	}
	if cfg.OneWay {
		match = codec.MatchNone
	}
	ccfg := transport.ClientConfig{Config: transport.Config{SocketReceiveBuffer: cfg.RcvBuf}}
	if cfg.Mode == "roundtrip" && cfg.RecvMode == "sync" {
		ccfg.Mode = transport.ReceiveSync // the waiting request reads; windowed runs need the receive goroutine
	}
	clients := make([]*codec.Client, cfg.Clients)
	for i := range clients {
		c, err := codec.Dial(ctx, cfg.protocol(), r.addr, ccfg, codec.Options{Pipeline: codecPipeline(cfg.Codec), Match: match})
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
		if err := c.Write(newCodecMessage(r.cfg)); err != nil {
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
		reply, err := c.Request(ctx, newCodecMessage(r.cfg))
		if err != nil {
			if over(ctx) {
				return nil
			}
			return err
		}
		releaseReply(reply)
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
	slots := make(chan struct{}, window)
	var pending sync.WaitGroup
	var failed atomic.Value
	size := uint64(r.cfg.Size)
	cb := func(reply any, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, err)
		} else {
			r.received.Add(size)
		}
		releaseReply(reply)
		<-slots
		pending.Done()
	}
	conn := c.Conn()
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		pending.Add(1)
		if err := conn.RequestAsync(context.Background(), newCodecMessage(r.cfg), cb); err != nil {
			<-slots
			pending.Done()
			return err
		}
		r.sent.Add(size)
	}
	pending.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return nil
}
