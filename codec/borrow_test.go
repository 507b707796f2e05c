package codec_test

// Tests of "reads lend, writes give": inbound messages are borrowed by the
// handler (valid during the call), and every write takes ownership, copying
// or keeping what is borrowed.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// borrowSizes cover every write path: a copy into the send buffer (below
// 512 bytes), Keep by copy (below packet.KeepCopyBelow) and by share, the
// long SRMP header, and frames longer than the receive buffer.
var borrowSizes = []int{0, 1, 100, 511, 512, 2047, 2048, 5000, 65534, 65535, 70000, 100000}

// body returns n bytes that differ for each (tag, n).
func body(tag byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = tag + byte(i%251)
	}
	return b
}

// serveCfg is serve with transport settings.
func serveCfg(t *testing.T, network string, cfg transport.Config, opts codec.Options) (*codec.Server, string) {
	t.Helper()
	srv, err := codec.NewServer(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	a, err := srv.Listen(context.Background(), network, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return srv, a.String()
}

// lifecycle counts a server's connection ends; a handler that misuses a
// buffer (a panic in lifenet_debug builds) ends its connection.
type lifecycle struct{ closed atomic.Int32 }

func (l *lifecycle) onClose(*codec.Conn, error) { l.closed.Add(1) }

// The footgun of the old API, now harmless: a handler that answers with the
// request's own (borrowed) payload and then releases the request. Release
// on a borrowed message or packet does nothing, and Reply / Write copy or
// keep what they are given, so the session stays up and every reply is
// right, over every write path.
func TestHandlerReleasesBorrowedMessage(t *testing.T) {
	lf4 := codec.LengthField{Size: 4} // room for the 100000-byte payloads
	cases := []struct {
		name     string
		pipeline *codec.Pipeline
		handler  func(c *codec.Conn, msg any)
	}{
		{"srmp/Reply", srmpPipeline(), func(c *codec.Conn, msg any) {
			req := msg.(*codec.Message)
			if err := c.Reply(req, req.Payload); err != nil {
				t.Errorf("Reply: %v", err)
			}
			req.Release()
		}},
		{"srmp/Write", srmpPipeline(), func(c *codec.Conn, msg any) {
			req := msg.(*codec.Message)
			req.Kind = codec.KindReply // answer with the request itself
			if err := c.Write(req); err != nil {
				t.Errorf("Write: %v", err)
			}
			req.Release()
		}},
		{"lengthfield/Write", codec.NewPipeline(codec.LengthFieldFraming(lf4, codec.FramerConfig{})), func(c *codec.Conn, msg any) {
			p := msg.(*packet.Packet)
			if err := c.Write(p); err != nil {
				t.Errorf("Write: %v", err)
			}
			p.Release()
		}},
	}
	for _, tc := range cases {
		for _, m := range clientModes {
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				leakcheck.Check(t)
				var life lifecycle
				srv, addr := serve(t, "tcp", codec.Options{Pipeline: tc.pipeline, Handler: tc.handler, OnClose: life.onClose})
				c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: tc.pipeline}, m.mode)
				ctx := context.Background()
				for round := range 2 { // the same connection keeps working
					for i, n := range borrowSizes {
						want := body(byte(10*round+i), n)
						var got []byte
						if tc.pipeline.Match() == codec.MatchSRMP {
							r, err := c.Request(ctx, codec.NewMessage(codec.KindRequest, codec.FlagBinary, 0, payload(want)))
							if err != nil {
								t.Fatalf("%d bytes: %v", n, err)
							}
							if r.Kind != codec.KindReply || r.Flag != codec.FlagBinary {
								t.Fatalf("%d bytes: reply kind %d flag %d", n, r.Kind, r.Flag)
							}
							got = append(got, r.PayloadBytes()...)
							r.Release()
						} else {
							r, err := c.RequestPacket(ctx, payload(want))
							if err != nil {
								t.Fatalf("%d bytes: %v", n, err)
							}
							got = r.AppendTo(nil)
							r.Release()
						}
						if !bytes.Equal(got, want) {
							t.Fatalf("round %d, %d bytes: reply of %d bytes differs", round, n, len(got))
						}
					}
				}
				if n := life.closed.Load(); n != 0 || srv.Transport().SessionCount() != 1 {
					t.Fatalf("the server closed %d connection(s); %d open", n, srv.Transport().SessionCount())
				}
			})
		}
	}
}

// kept is what a handler kept past its call, checked later.
type kept struct {
	mu    sync.Mutex
	msgs  []*codec.Message
	pkts  []*packet.Packet
	wants [][]byte
}

func (k *kept) check(t *testing.T) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	i := 0
	for _, m := range k.msgs {
		if m.Borrowed() || !bytes.Equal(m.PayloadBytes(), k.wants[i]) {
			t.Errorf("kept message %d: borrowed %v, %d bytes, want %d intact bytes", i, m.Borrowed(), len(m.PayloadBytes()), len(k.wants[i]))
		}
		m.Release()
		i++
	}
	for _, p := range k.pkts {
		if p.Borrowed() || !bytes.Equal(p.AppendTo(nil), k.wants[i]) {
			t.Errorf("kept payload %d: %d bytes, want %d intact bytes", i, p.Total(), len(k.wants[i]))
		}
		p.Release()
		i++
	}
	if i != len(k.wants) {
		t.Errorf("kept %d, want %d", i, len(k.wants))
	}
}

// A handler that keeps messages past its call (Message.Keep,
// Message.TakePayload, packet.Keep) holds intact bytes even after many
// later reads have reused (or replaced) the receive buffer.
func TestHandlerKeepsPastTheCall(t *testing.T) {
	t.Run("srmp", func(t *testing.T) {
		leakcheck.Check(t)
		var k kept
		_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
			m := msg.(*codec.Message)
			if m.Kind == codec.KindRequest { // the sync point: everything before is handled
				c.ReplyBytes(m, nil)
				return
			}
			if m.Seq >= 100 { // filler that overwrites the receive buffer
				return
			}
			want := append([]byte(nil), m.PayloadBytes()...)
			k.mu.Lock()
			defer k.mu.Unlock()
			if m.Seq%2 == 0 {
				km := m.Keep()
				if m.Payload != nil || !m.Borrowed() {
					t.Error("Keep did not leave the borrowed message without its payload")
				}
				k.msgs = append(k.msgs, km)
			} else {
				p := m.TakePayload()
				if p == nil {
					p = packet.Get(0)
				}
				if m.Payload != nil {
					t.Error("TakePayload left the payload in place")
				}
				k.pkts = append(k.pkts, p)
			}
			k.wants = append(k.wants, want)
		}})
		c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
		var wants [2][][]byte // even, odd sequence numbers
		for i, n := range borrowSizes {
			b := body(byte(i), n)
			wants[i%2] = append(wants[i%2], b)
			if err := c.Write(codec.NewMessage(codec.KindOneWay, 0, uint8(i), payload(b))); err != nil {
				t.Fatal(err)
			}
		}
		overwrite(t, func(i int, b []byte) error {
			return c.Write(codec.NewMessage(codec.KindOneWay, 0, uint8(100+i%100), payload(b)))
		})
		r, err := c.Request(context.Background(), request("sync"))
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
		k.mu.Lock()
		k.wants = append(wants[0], wants[1]...) // the order check reads them in: messages, then payloads
		k.mu.Unlock()
		k.check(t)
	})
	t.Run("lengthfield", func(t *testing.T) {
		leakcheck.Check(t)
		lf := codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{Size: -4}, codec.FramerConfig{}))
		var k kept
		var n atomic.Int32
		_, addr := serve(t, "tcp", codec.Options{Pipeline: lf, Handler: func(c *codec.Conn, msg any) {
			p := msg.(*packet.Packet)
			switch i := n.Add(1) - 1; {
			case int(i) < len(borrowSizes):
				k.mu.Lock()
				k.pkts = append(k.pkts, p.Keep())
				k.wants = append(k.wants, append([]byte(nil), p.Bytes()...))
				k.mu.Unlock()
			case string(p.Bytes()) == "sync":
				c.Write(p)
			}
		}})
		c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: lf})
		for i, size := range borrowSizes {
			if err := c.Write(payload(body(byte(i), size))); err != nil {
				t.Fatal(err)
			}
		}
		overwrite(t, func(_ int, b []byte) error { return c.Write(payload(b)) })
		r, err := c.RequestPacket(context.Background(), payload([]byte("sync")))
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
		k.check(t)
		for i, w := range k.wants {
			if !bytes.Equal(w, body(byte(i), borrowSizes[i])) {
				t.Fatalf("handler saw message %d wrong", i)
			}
		}
	})
	t.Run("async-reply", func(t *testing.T) {
		leakcheck.Check(t)
		_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
		c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
		var k kept
		var wg sync.WaitGroup
		for i, n := range borrowSizes {
			b := body(byte(i), n)
			wg.Add(1)
			err := c.RequestAsync(context.Background(), codec.NewMessage(codec.KindRequest, 0, 0, payload(b)), func(r *codec.Message, err error) {
				defer wg.Done()
				if err != nil {
					t.Error(err)
					return
				}
				if !r.Borrowed() {
					t.Error("async reply not borrowed")
				}
				k.mu.Lock()
				k.msgs = append(k.msgs, r.Keep())
				k.wants = append(k.wants, b)
				k.mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		for i := range 50 { // more replies through the same receive buffer
			r, err := c.Request(context.Background(), codec.NewMessage(codec.KindRequest, 0, 0, payload(body(0xAA, 1000+i))))
			if err != nil {
				t.Fatal(err)
			}
			r.Release()
		}
		k.check(t)
	})
}

// overwrite sends 300 filler messages of up to 8 KiB through send, so
// the peer's receive buffer is read into (and reused) many times.
func overwrite(t *testing.T, send func(i int, b []byte) error) {
	t.Helper()
	for i := range 300 {
		if err := send(i, bytes.Repeat([]byte{0xEE}, 1+i*27%8192)); err != nil {
			t.Fatal(err)
		}
	}
}

// A frame that spans reads is assembled by the framer and lent like any
// other; the handler keeps it and the bytes stay intact. The server's
// receive buffer is 1 KiB, and the client writes each frame in pieces over
// an in-memory pipe, where every write is a read of its own.
func TestFrameSpanningReadsBorrowedAndKept(t *testing.T) {
	leakcheck.Check(t)
	var k kept
	sizes := []int{10, 700, 3000, 70000}
	handled := make(chan struct{}, len(sizes))
	srv, err := codec.NewServer(transport.Config{ReadBufferSize: 1024}, codec.Options{Pipeline: srmpPipeline(),
		Handler: func(c *codec.Conn, msg any) {
			m := msg.(*codec.Message)
			if !m.Borrowed() {
				t.Error("message not borrowed")
			}
			want := append([]byte(nil), m.PayloadBytes()...)
			c.Reply(m, m.Payload)
			k.mu.Lock()
			k.msgs = append(k.msgs, m.Keep())
			k.wants = append(k.wants, want)
			k.mu.Unlock()
			handled <- struct{}{}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l := newPipeListener()
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	conn := l.dial()
	defer conn.Close()
	replies := make(chan error, 1)
	go func() { // a pipe write waits for its reader: read the replies meanwhile
		r := bufioReader(conn)
		for i, n := range sizes {
			m, err := readSRMP(r)
			if err != nil {
				replies <- err
				return
			}
			if m.Kind != codec.KindReply || m.Seq != uint8(i+1) || !bytes.Equal(m.PayloadBytes(), body(byte(i), n)) {
				t.Errorf("reply %d: kind %d seq %d, %d bytes", i, m.Kind, m.Seq, len(m.PayloadBytes()))
			}
			m.Release()
		}
		replies <- nil
	}()
	for i, n := range sizes {
		f := encodeSRMP(t, codec.KindRequest, codec.FlagBinary, uint8(i+1), body(byte(i), n))
		for len(f) > 0 { // header split, then pieces in separate writes (reads)
			k := min(len(f), 3+len(f)/5)
			if _, err := conn.Write(f[:k]); err != nil {
				t.Fatal(err)
			}
			f = f[k:]
		}
	}
	if err := <-replies; err != nil {
		t.Fatal(err)
	}
	for range sizes {
		<-handled
	}
	k.check(t)
}

// Closing a ReceiveSync client while its requests are reading races with
// nothing: the framer is reset under the read turn.
func TestSyncClientCloseWhileReading(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, transport.ReceiveSync)
	var wg sync.WaitGroup
	var answered atomic.Int32
	going := make(chan struct{}) // closed once the requests are well under way
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				r, err := c.Request(context.Background(), codec.NewMessage(codec.KindRequest, 0, 0, payload(body(byte(g), 3000+i))))
				if err != nil {
					return
				}
				r.Release()
				if answered.Add(1) == 40 {
					close(going)
				}
			}
		})
	}
	select {
	case <-going:
	case <-time.After(10 * time.Second):
		t.Fatal("40 requests not answered in 10 s")
	}
	c.Close()
	wg.Wait()
	if _, err := c.Request(context.Background(), request("after")); err == nil {
		t.Fatal("request after Close succeeded")
	}
}

func bufioReader(c net.Conn) *bufio.Reader {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return bufio.NewReaderSize(c, 64<<10)
}

// readSRMP reads one SRMP frame from r and decodes it (owned).
func readSRMP(r *bufio.Reader) (*codec.Message, error) {
	frame := make([]byte, 4, 8)
	if _, err := io.ReadFull(r, frame); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint16(frame[2:]))
	if n == 0xFFFF {
		frame = frame[:8]
		if _, err := io.ReadFull(r, frame[4:]); err != nil {
			return nil, err
		}
		n = int(binary.LittleEndian.Uint32(frame[4:]))
	}
	frame = append(frame, make([]byte, n)...)
	if _, err := io.ReadFull(r, frame[len(frame)-n:]); err != nil {
		return nil, err
	}
	return codec.DecodeSRMP(payload(frame))
}
