package codec_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// intoDst is what copyInto decodes into: the reply's payload, and whether
// the reply was borrowed when use got it.
type intoDst struct {
	payload  string
	borrowed bool
}

var errUse = errors.New("use refused the reply")

// copyInto is a ReplyUse and copyPacketInto a PacketUse: each copies the
// reply into dst (an *intoDst), and refuses a reply "refuse" with errUse.
func copyInto(dst any, reply *codec.Message) error {
	return decodeInto(dst.(*intoDst), reply.PayloadBytes(), reply.Borrowed())
}

func copyPacketInto(dst any, reply *packet.Packet) error {
	return decodeInto(dst.(*intoDst), reply.Bytes(), reply.Borrowed())
}

func decodeInto(d *intoDst, payload []byte, borrowed bool) error {
	d.payload, d.borrowed = string(payload), borrowed
	if d.payload == "refuse" {
		return errUse
	}
	return nil
}

// echoOrFail echoes requests, answering "fail" with an error reply.
func echoOrFail(c *codec.Conn, msg any) {
	m := msg.(*codec.Message)
	if m.Kind != codec.KindRequest {
		return
	}
	if string(m.PayloadBytes()) == "fail" {
		c.ReplyError(m, m.Payload)
		return
	}
	c.Reply(m, m.Payload)
}

// RequestBytesInto hands use the reply with dst: borrowed, straight from
// the read, when the caller reads it (ReceiveSync), a kept copy when a
// receive goroutine read it; use's error is the call's, with used set; an
// error reply is the request's error, and use does not see it. With or
// without a Handler (both read by the flat path).
func TestRequestBytesInto(t *testing.T) {
	for _, m := range clientModes {
		for _, handler := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/handler=%v", m.name, handler), func(t *testing.T) {
				leakcheck.Check(t)
				_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoOrFail})
				opts := codec.Options{Pipeline: srmpPipeline()}
				if handler {
					opts.Handler = func(*codec.Conn, any) {}
				}
				conn := dialCodec(t, "tcp", addr, opts, m.mode).Conn()
				ctx := context.Background()
				for i := range 20 {
					body := fmt.Sprintf("request %d", i)
					var d intoDst
					used, err := conn.RequestBytesInto(ctx, codec.FlagPacket, []byte(body), 7, copyInto, &d)
					if !used || err != nil || d.payload != body {
						t.Fatalf("request %d: used %v, %v, decoded %q", i, used, err, d.payload)
					}
					if want := m.mode == transport.ReceiveSync; d.borrowed != want {
						t.Fatalf("request %d: use got a borrowed reply: %v, want %v", i, d.borrowed, want)
					}
				}
				var d intoDst
				if used, err := conn.RequestBytesInto(ctx, codec.FlagPacket, []byte("refuse"), 0, copyInto, &d); !used || err != errUse {
					t.Fatalf("a reply use refused: used %v, %v", used, err)
				}
				d = intoDst{}
				used, err := conn.RequestBytesInto(ctx, codec.FlagPacket, []byte("fail"), 0, copyInto, &d)
				var re *codec.ReplyError
				if used || !errors.As(err, &re) || string(re.Payload) != "fail" || d.payload != "" {
					t.Fatalf("an error reply: used %v, %v, use saw %q", used, err, d.payload)
				}
			})
		}
	}
}

// RequestPacketInto hands use the FIFO reply with dst: borrowed, straight
// from the read, when the caller reads it (ReceiveSync), a kept copy when
// a receive goroutine read it; use's error is the call's, with used set.
// Its replies are those RequestPacket returns for the same requests.
func TestRequestPacketInto(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: echoLF})
			conn := dialCodec(t, "tcp", addr, codec.Options{Pipeline: lfPipeline()}, m.mode).Conn()
			ctx := context.Background()
			for i := range 20 {
				body := fmt.Sprintf("request %d", i)
				var d intoDst
				used, err := conn.RequestPacketInto(ctx, packet.Wrap([]byte(body)), copyPacketInto, &d)
				if !used || err != nil || d.payload != body {
					t.Fatalf("request %d: used %v, %v, decoded %q", i, used, err, d.payload)
				}
				if want := m.mode == transport.ReceiveSync; d.borrowed != want {
					t.Fatalf("request %d: use got a borrowed reply: %v, want %v", i, d.borrowed, want)
				}
				r, err := conn.RequestPacket(ctx, packet.Wrap([]byte(body))) // the general path, the same request
				if err != nil || string(r.Bytes()) != d.payload {
					t.Fatalf("request %d: RequestPacket %q, %v; RequestPacketInto decoded %q", i, r.Bytes(), err, d.payload)
				}
				r.Release()
			}
			var d intoDst
			if used, err := conn.RequestPacketInto(ctx, packet.Wrap([]byte("refuse")), copyPacketInto, &d); !used || err != errUse {
				t.Fatalf("a reply use refused: used %v, %v", used, err)
			}
			conn.Close()
			d = intoDst{}
			used, err := conn.RequestPacketInto(ctx, packet.Wrap([]byte("late")), copyPacketInto, &d)
			if used || !errors.Is(err, codec.ErrConnClosed) || d.payload != "" {
				t.Fatalf("on a closed connection: used %v, %v, use saw %q", used, err, d.payload)
			}
		})
	}
}

// intoCall is one of the borrowing requests, RequestBytesInto or
// RequestPacketInto, on a connection of its codec: it sends body and
// decodes the reply into d (copyInto, copyPacketInto), or hands it to a
// use that panics (boom).
type intoCall struct {
	name    string
	options func(handler func(*codec.Conn, any)) codec.Options
	echo    func(*codec.Conn, any)
	call    func(conn *codec.Conn, body string, d *intoDst, boom bool) (bool, error)
}

var intoCalls = []intoCall{
	{"srmp", func(h func(*codec.Conn, any)) codec.Options {
		return codec.Options{Pipeline: srmpPipeline(), Handler: h}
	}, echoSRMP,
		func(conn *codec.Conn, body string, d *intoDst, boom bool) (bool, error) {
			use := codec.ReplyUse(copyInto)
			if boom {
				use = func(any, *codec.Message) error { panic("boom") }
			}
			return conn.RequestBytesInto(context.Background(), codec.FlagPacket, []byte(body), len(body), use, d)
		}},
	{"lengthfield", func(h func(*codec.Conn, any)) codec.Options { return codec.Options{Pipeline: lfPipeline(), Handler: h} }, echoLF,
		func(conn *codec.Conn, body string, d *intoDst, boom bool) (bool, error) {
			use := codec.PacketUse(copyPacketInto)
			if boom {
				use = func(any, *packet.Packet) error { panic("boom") }
			}
			return conn.RequestPacketInto(context.Background(), packet.Wrap([]byte(body)), use, d)
		}},
}

// Concurrent borrowing requests on a ReceiveSync client each decode their
// own reply, whether their goroutine read it or another did.
func TestRequestIntoConcurrent(t *testing.T) {
	for _, ic := range intoCalls {
		t.Run(ic.name, func(t *testing.T) {
			leakcheck.Check(t)
			_, addr := serve(t, "tcp", ic.options(ic.echo))
			conn := dialCodec(t, "tcp", addr, ic.options(func(*codec.Conn, any) {}), transport.ReceiveSync).Conn()
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 100 {
						body := fmt.Sprintf("%d/%d", g, i)
						var d intoDst
						if used, err := ic.call(conn, body, &d, false); !used || err != nil || d.payload != body {
							t.Errorf("%s: used %v, %v, decoded %q", body, used, err, d.payload)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// A panic in use while it runs on the read reaches its caller, and the
// connection's read turn is given back: the requests after it, and those
// waiting meanwhile, get their replies.
func TestRequestIntoPanicReachesTheCaller(t *testing.T) {
	for _, ic := range intoCalls {
		t.Run(ic.name, func(t *testing.T) {
			leakcheck.Check(t)
			_, addr := serve(t, "tcp", ic.options(ic.echo))
			conn := dialCodec(t, "tcp", addr, ic.options(nil), transport.ReceiveSync).Conn()
			func() {
				defer func() {
					if v := recover(); v != "boom" {
						t.Fatalf("recovered %v, want use's panic", v)
					}
				}()
				ic.call(conn, "x", nil, true)
				t.Fatal("the request returned past use's panic")
			}()
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					body := fmt.Sprint(i)
					var d intoDst
					if used, err := ic.call(conn, body, &d, false); !used || err != nil || d.payload != body {
						t.Errorf("after the panic: used %v, %v, decoded %q, want %q", used, err, d.payload, body)
					}
				})
			}
			wg.Wait()
		})
	}
}
