package codec_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// On the flat read path, small replies to the frames of a read are
// buffered; any other write the handler makes (a push, a large reply) must
// still leave after the replies it made before, and before those after.
func TestFlatPathKeepsWriteOrder(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		req := msg.(*codec.Message)
		c.Reply(req, req.Payload) // buffered: small and borrowed
		if req.Seq == 1 {
			push := packet.Get(4)
			copy(push.Bytes(), "push")
			c.Write(codec.NewMessage(codec.KindOneWay, codec.FlagString, 9, push)) // not buffered
			c.Reply(req, packet.Wrap(make([]byte, 3000)))                          // large: not buffered
		}
	}})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var frames []byte // three requests in one write: one read on the server
	for seq := uint8(1); seq <= 3; seq++ {
		frames = append(frames, encodeSRMP(t, codec.KindRequest, codec.FlagBinary, seq, []byte{'a' + seq})...)
	}
	if _, err := conn.Write(frames); err != nil {
		t.Fatal(err)
	}
	r := bufioReader(conn)
	want := []struct {
		kind codec.Kind
		seq  uint8
		n    int
	}{{codec.KindReply, 1, 1}, {codec.KindOneWay, 9, 4}, {codec.KindReply, 1, 3000}, {codec.KindReply, 2, 1}, {codec.KindReply, 3, 1}}
	for i, w := range want {
		m, err := readSRMP(r)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m.Kind != w.kind || m.Seq != w.seq || m.Payload.Total() != w.n {
			t.Fatalf("message %d: kind %d seq %d, %d bytes; want kind %d seq %d, %d bytes", i, m.Kind, m.Seq, m.Payload.Total(), w.kind, w.seq, w.n)
		}
		m.Release()
	}
}

// On the flat read path every frame of a read is lent in the same view,
// which ends with the read: in lifenet_debug builds a handler that (wrongly)
// kept a borrowed payload panics when it uses it after the read.
func TestFlatPathEndsTheLoanWithTheRead(t *testing.T) {
	leakcheck.Check(t)
	for _, format := range []string{"lengthfield", "srmp"} {
		t.Run(format, func(t *testing.T) {
			var stale *packet.Packet
			closed := make(chan any, 1)
			opts := codec.Options{
				Pipeline: lfPipeline(),
				Handler: func(c *codec.Conn, msg any) {
					if m, ok := msg.(*codec.Message); ok {
						stale = m.Payload
						c.Reply(m, m.Payload)
						return
					}
					stale = msg.(*packet.Packet)
					c.Write(stale)
				},
				OnClose: func(*codec.Conn, error) { closed <- panicOf(func() { stale.Len() }) }, // the reading goroutine, after its reads
			}
			var frames []byte // three frames in one write: one read on the server
			for i := range 3 {
				body := []byte{'a' + byte(i), 'b'}
				if format == "srmp" {
					frames = append(frames, encodeSRMP(t, codec.KindRequest, codec.FlagBinary, uint8(i+1), body)...)
				} else {
					frames = append(frames, byte(len(body)), 0)
					frames = append(frames, body...)
				}
			}
			if format == "srmp" {
				opts.Pipeline = srmpPipeline()
			}
			_, addr := serve(t, "tcp", opts)
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write(frames); err != nil {
				t.Fatal(err)
			}
			echo := make([]byte, len(frames)) // the replies are as long as the requests
			if _, err := io.ReadFull(conn, echo); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			r := <-closed
			if debugBuild && r != packet.ErrReleased {
				t.Errorf("a payload kept past its read: panic %v, want ErrReleased", r)
			}
			if !debugBuild && r != nil {
				t.Errorf("a payload kept past its read: panic %v in a build without lifenet_debug", r)
			}
		})
	}
}

// A client without a Handler reads by the flat path too: a push the
// server sends before each reply is dropped, and every reply still
// reaches its request, whichever goroutine reads (ReceiveSync or the
// receive goroutine), for both formats the loop knows.
func TestFlatPathClientWithoutHandlerDropsPushes(t *testing.T) {
	for _, m := range clientModes {
		for _, format := range []string{"srmp", "lengthfield"} {
			t.Run(m.name+"/"+format, func(t *testing.T) {
				leakcheck.Check(t)
				pipeline, push := srmpPipeline(), func(c *codec.Conn) {
					c.Write(codec.NewMessage(codec.KindOneWay, codec.FlagString, 9, packet.Wrap([]byte("push"))))
				}
				if format == "lengthfield" {
					pipeline = lfPipeline()
					push = func(c *codec.Conn) {} // FIFO: a frame before the reply would be taken for it
				}
				_, addr := serve(t, "tcp", codec.Options{Pipeline: pipeline, Handler: func(c *codec.Conn, msg any) {
					switch v := msg.(type) {
					case *codec.Message:
						push(c)
						c.Reply(v, v.Payload)
					case *packet.Packet:
						c.Write(v)
					}
				}})
				conn := dialCodec(t, "tcp", addr, codec.Options{Pipeline: pipeline}, m.mode).Conn()
				for i := range 50 {
					body := fmt.Sprintf("request %d", i)
					got, err := requestText(conn, format, body)
					if err != nil || got != body {
						t.Fatalf("request %d: %q, %v", i, got, err)
					}
				}
			})
		}
	}
}

// requestText sends body as one request of format on conn and returns the
// reply's text.
func requestText(conn *codec.Conn, format, body string) (string, error) {
	ctx := context.Background()
	if format == "srmp" {
		r, err := conn.RequestBytes(ctx, codec.FlagString, []byte(body))
		if err != nil {
			return "", err
		}
		defer r.Release()
		return string(r.PayloadBytes()), nil
	}
	p, err := conn.RequestPacket(ctx, packet.Wrap([]byte(body)))
	if err != nil {
		return "", err
	}
	defer p.Release()
	return string(p.Bytes()), nil
}
