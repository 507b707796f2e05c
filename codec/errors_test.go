package codec_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// passThrough is a pipeline stage that frames nothing.
type passThrough struct{}

func (passThrough) Read(c *codec.HandlerContext, msg any) error  { return c.FireRead(msg) }
func (passThrough) Write(c *codec.HandlerContext, msg any) error { return c.FireWrite(msg) }

// Pipeline.Match follows from the framing stage nearest the tail.
func TestPipelineMatch(t *testing.T) {
	pass := func() codec.Handler { return passThrough{} }
	lf := codec.LengthFieldFraming(codec.LengthField{}, codec.FramerConfig{})
	for _, c := range []struct {
		p    *codec.Pipeline
		want codec.MatchMode
	}{
		{codec.NewPipeline(), codec.MatchNone},
		{codec.NewPipeline(pass), codec.MatchNone},
		{codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{})), codec.MatchSRMP},
		{codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}), pass), codec.MatchSRMP},
		{codec.NewPipeline(lf), codec.MatchFIFO},
		{codec.NewPipeline(codec.DelimiterFraming(codec.Delimiter{}, codec.FramerConfig{})), codec.MatchFIFO},
		{codec.NewPipeline(lf, codec.SRMPFraming(codec.FramerConfig{})), codec.MatchSRMP}, // SRMP inside length-field frames
	} {
		if got := c.p.Match(); got != c.want {
			t.Errorf("Match() = %v, want %v", got, c.want)
		}
	}
}

// Requests that cannot be matched or are of the wrong type fail at once
// with their own error, release what they were given (leakcheck), and leave
// the connection working.
func TestRequestErrors(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	_, srmpAddr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	_, lfAddr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: echoLF})
	srmp := dialCodec(t, "tcp", srmpAddr, codec.Options{Pipeline: srmpPipeline()})
	lf := dialCodec(t, "tcp", lfAddr, codec.Options{Pipeline: lfPipeline()})
	none := dialCodec(t, "tcp", srmpAddr, codec.Options{Pipeline: codec.NewPipeline(func() codec.Handler { return passThrough{} })})
	noCallback := func(any, error) { t.Error("callback ran") }
	msgCB := func(m *codec.Message, err error) { noCallback(m, err) }
	pktCB := func(p *packet.Packet, err error) { noCallback(p, err) }
	streamCB := func(m *codec.Message, err error) codec.StreamStep { noCallback(m, err); return codec.StreamDone }

	for _, kind := range []codec.Kind{codec.KindOneWay, codec.KindReply, codec.KindError} {
		m := codec.NewMessage(kind, 0, 0, payload([]byte("x")))
		if _, err := srmp.Request(ctx, m); !errors.Is(err, codec.ErrNotRequest) {
			t.Errorf("Request of kind %d: %v, want ErrNotRequest", kind, err)
		}
		m = codec.NewMessage(kind, 0, 0, payload([]byte("x")))
		if err := srmp.RequestAsync(ctx, m, msgCB); !errors.Is(err, codec.ErrNotRequest) {
			t.Errorf("RequestAsync of kind %d: %v, want ErrNotRequest", kind, err)
		}
	}
	for name, err := range map[string]error{
		"RequestPacket on SRMP":      second(srmp.RequestPacket(ctx, payload([]byte("x")))),
		"RequestPacketAsync on SRMP": srmp.Conn().RequestPacketAsync(ctx, payload([]byte("x")), pktCB),
		"Request on length field":    second(lf.Request(ctx, request("x"))),
		"RequestAsync on length fld": lf.RequestAsync(ctx, request("x"), msgCB),
		"RequestBytesAsync on lf":    lf.RequestBytesAsync(ctx, 0, []byte("x"), msgCB),
		"RequestStream on lf":        lf.Conn().RequestStream(ctx, 0, []byte("x"), 1, streamCB),
	} {
		if !errors.Is(err, codec.ErrWrongFormat) {
			t.Errorf("%s: %v, want ErrWrongFormat", name, err)
		}
	}
	if none.Conn().Session() == nil {
		t.Fatal("no session")
	}
	for name, err := range map[string]error{
		"Request":            second(none.Request(ctx, request("x"))),
		"RequestPacket":      second(none.RequestPacket(ctx, payload([]byte("x")))),
		"RequestAsync":       none.RequestAsync(ctx, request("x"), msgCB),
		"RequestPacketAsync": none.RequestPacketAsync(ctx, payload([]byte("x")), pktCB),
		"RequestBytesAsync":  none.RequestBytesAsync(ctx, 0, []byte("x"), msgCB),
		"RequestStream":      none.Conn().RequestStream(ctx, 0, []byte("x"), 1, streamCB),
	} {
		if !errors.Is(err, codec.ErrNoMatch) {
			t.Errorf("%s without a framing stage: %v, want ErrNoMatch", name, err)
		}
	}
	if st := none.Conn().Stats(); st != (codec.MatchStats{}) {
		t.Errorf("stats of a connection without matching: %+v", st)
	}

	// The connections still work.
	r, err := srmp.Request(ctx, request("ok"))
	if got := replyText(t, r, err); got != "ok" {
		t.Fatalf("SRMP after the errors: %q", got)
	}
	p, err := lf.RequestPacket(ctx, payload([]byte("ok")))
	if err != nil || string(p.Bytes()) != "ok" {
		t.Fatalf("length field after the errors: %v", err)
	}
	p.Release()
}

func second[T any](_ T, err error) error { return err }

// A ReceiveSync client refuses both async forms with ErrAsyncNeedsEvents.
func TestSyncClientRefusesAsyncForms(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: echoLF})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: lfPipeline()}, transport.ReceiveSync)
	err := c.RequestPacketAsync(context.Background(), payload([]byte("x")), func(*packet.Packet, error) { t.Error("callback ran") })
	if !errors.Is(err, codec.ErrAsyncNeedsEvents) {
		t.Fatalf("RequestPacketAsync on a sync client: %v", err)
	}
}

// NewServer and Dial validate their options before doing anything.
func TestOptionsValidate(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	if _, err := codec.NewServer(transport.Config{}, codec.Options{}); !errors.Is(err, codec.ErrNoPipeline) {
		t.Errorf("NewServer without a pipeline: %v, want ErrNoPipeline", err)
	}
	if _, err := codec.Dial(ctx, "tcp", "127.0.0.1:1", transport.ClientConfig{}, codec.Options{}); !errors.Is(err, codec.ErrNoPipeline) {
		t.Errorf("Dial without a pipeline: %v, want ErrNoPipeline", err)
	}
	bad := codec.Options{Pipeline: srmpPipeline(), Timeout: -time.Second}
	if err := bad.Validate(); !errors.Is(err, codec.ErrConfig) {
		t.Errorf("negative Timeout: %v, want ErrConfig", err)
	}
	if _, err := codec.NewServer(transport.Config{}, bad); !errors.Is(err, codec.ErrConfig) {
		t.Errorf("NewServer with a negative Timeout: %v, want ErrConfig", err)
	}
	if _, err := codec.Dial(ctx, "tcp", "127.0.0.1:1", transport.ClientConfig{}, bad); !errors.Is(err, codec.ErrConfig) {
		t.Errorf("Dial with a negative Timeout: %v, want ErrConfig", err)
	}
	if _, err := codec.NewServer(transport.Config{MaxConns: -1}, codec.Options{Pipeline: srmpPipeline()}); !errors.Is(err, transport.ErrConfig) {
		t.Errorf("NewServer with a bad transport config: %v, want transport.ErrConfig", err)
	}
	good := codec.Options{Pipeline: srmpPipeline()}
	if err := good.Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// LengthField.Validate accepts the implemented formats and refuses others
// with ErrConfig; LengthFieldFraming panics with that error.
func TestLengthFieldValidate(t *testing.T) {
	for _, lf := range []codec.LengthField{
		{}, {Size: 1}, {Size: 2}, {Size: 4}, {Size: -2}, {Size: -4}, {Size: codec.VarintLength},
		{Offset: 3, Size: 2}, {Offset: 1 << 16, Size: 4},
	} {
		if err := lf.Validate(); err != nil {
			t.Errorf("%+v: %v", lf, err)
		}
	}
	for _, lf := range []codec.LengthField{
		{Size: 3}, {Size: 8}, {Size: -3}, {Size: -8}, {Offset: -1}, {Offset: 1<<16 + 1, Size: 2},
	} {
		err := lf.Validate()
		if !errors.Is(err, codec.ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", lf, err)
			continue
		}
		r := panicOf(func() { codec.LengthFieldFraming(lf, codec.FramerConfig{}) })
		if perr, ok := r.(error); !ok || !errors.Is(perr, codec.ErrConfig) {
			t.Errorf("LengthFieldFraming(%+v) panicked with %v, want ErrConfig", lf, r)
		}
	}
}

// A payload too long for the length field is refused (not truncated), with
// a message naming the field's real width — 2 bytes for the zero value —
// whether it goes through Encode or, small, straight into the send buffer.
func TestLengthFieldDoesNotFitMessage(t *testing.T) {
	leakcheck.Check(t)
	for _, c := range []struct {
		lf    codec.LengthField
		n     int
		width string
	}{
		{codec.LengthField{}, 65536, "2-byte"},
		{codec.LengthField{Size: 2}, 65536, "2-byte"},
		{codec.LengthField{Size: -2, Offset: 3}, 65536, "2-byte"},
		{codec.LengthField{Size: 1}, 256, "1-byte"},
	} {
		_, err := c.lf.Encode(payload(make([]byte, c.n)))
		if !errors.Is(err, codec.ErrFrameTooLarge) || !strings.Contains(err.Error(), c.width+" length field") {
			t.Errorf("%+v, %d bytes: %v, want ErrFrameTooLarge naming a %s field", c.lf, c.n, err, c.width)
		}
	}

	// Through a connection: the copy path (under 512 bytes) and the
	// encode path. The connection stays up.
	p := codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{Size: 1}, codec.FramerConfig{}))
	conns := make(chan *codec.Conn, 1)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: p, OnOpen: func(c *codec.Conn) { conns <- c }, Handler: echoLF})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: p})
	srv := <-conns
	for _, n := range []int{300, 600, 5000} {
		err := srv.Write(payload(make([]byte, n)))
		if !errors.Is(err, codec.ErrFrameTooLarge) || !strings.Contains(err.Error(), "1-byte length field") {
			t.Errorf("Write of %d bytes on a 1-byte field: %v", n, err)
		}
	}
	r, err := c.RequestPacket(context.Background(), payload([]byte("fits")))
	if err != nil || string(r.Bytes()) != "fits" {
		t.Fatalf("after the refused writes: %v", err)
	}
	r.Release()
}

// A FIFO request that could not be sent (here: too long for its length
// field) must leave the queue, so the next request gets its own reply
// (before the fix it swallowed the next reply, and every later request was
// answered one reply late).
func TestFIFOUnsentRequestLeavesQueue(t *testing.T) {
	leakcheck.Check(t)
	p := codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{Size: 1}, codec.FramerConfig{}))
	_, addr := serve(t, "tcp", codec.Options{Pipeline: p, Handler: echoLF})
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: p, Timeout: 500 * time.Millisecond}, m.mode)
			if _, err := c.RequestPacket(context.Background(), payload(make([]byte, 300))); !errors.Is(err, codec.ErrFrameTooLarge) {
				t.Fatalf("oversized request: %v", err)
			}
			for _, word := range []string{"one", "two"} {
				r, err := c.RequestPacket(context.Background(), payload([]byte(word)))
				if err != nil {
					t.Fatalf("request %q after an unsent one: %v", word, err)
				}
				if got := string(r.Bytes()); got != word {
					t.Errorf("request %q got reply %q", word, got)
				}
				r.Release()
			}
		})
	}
}

// Every Validate error of the package wraps ErrConfig, ErrNoPipeline too.
func TestNoPipelineIsAConfigError(t *testing.T) {
	if _, err := codec.NewServer(transport.Config{}, codec.Options{}); !errors.Is(err, codec.ErrConfig) {
		t.Errorf("NewServer without a pipeline: %v, want an ErrConfig", err)
	}
}

// A request's timeout is a net.Error that says so and matches
// context.DeadlineExceeded, as a context's deadline does.
func TestTimeoutIsANetErrorAndADeadline(t *testing.T) {
	var ne net.Error
	if !errors.As(codec.ErrTimeout, &ne) || !ne.Timeout() {
		t.Errorf("ErrTimeout is not a net.Error with Timeout() true")
	}
	if !errors.Is(fmt.Errorf("request 7: %w", codec.ErrTimeout), context.DeadlineExceeded) {
		t.Errorf("a wrapped ErrTimeout does not match context.DeadlineExceeded")
	}
}
