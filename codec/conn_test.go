package codec_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

func srmpPipeline() *codec.Pipeline {
	return codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}))
}

func lfPipeline() *codec.Pipeline {
	return codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{}, codec.FramerConfig{}))
}

// serve starts a codec server with opts on network ("tcp" or "udp").
func serve(t *testing.T, network string, opts codec.Options) (*codec.Server, string) {
	t.Helper()
	return serveCfg(t, network, transport.Config{}, opts)
}

// dialCodec connects a codec client, in the event receive mode unless a
// mode is given.
func dialCodec(t *testing.T, network, addr string, opts codec.Options, mode ...transport.ReceiveMode) *codec.Client {
	t.Helper()
	var cfg transport.ClientConfig
	if len(mode) > 0 {
		cfg.Mode = mode[0]
	}
	c, err := codec.Dial(context.Background(), network, addr, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// clientModes are the two ways a codec client reads: a receive goroutine
// (event) and the waiting requests taking turns (sync).
var clientModes = []struct {
	name string
	mode transport.ReceiveMode
}{{"event", transport.ReceiveEvent}, {"sync", transport.ReceiveSync}}

// echoSRMP replies to every request with its own payload. The message is
// borrowed: Reply copies (or keeps) the borrowed payload.
func echoSRMP(c *codec.Conn, msg any) {
	m := msg.(*codec.Message)
	if m.Kind == codec.KindRequest {
		c.Reply(m, m.Payload)
	}
}

// echoKept answers a request that the handler kept (an owned message) and
// releases it.
func echoKept(c *codec.Conn, m *codec.Message) {
	if m.Kind == codec.KindRequest {
		c.Reply(m, m.TakePayload())
	}
	m.Release()
}

func request(body string) *codec.Message {
	return codec.NewMessage(codec.KindRequest, codec.FlagPacket, 0, payload([]byte(body)))
}

// replyText returns the text of an owned reply and releases it.
func replyText(t *testing.T, m *codec.Message, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	defer m.Release()
	if m.Borrowed() {
		t.Fatal("Request returned a borrowed reply")
	}
	if m.Kind != codec.KindReply {
		t.Fatalf("reply kind %d", m.Kind)
	}
	return string(m.PayloadBytes())
}

func TestSRMPRequestReply(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, m.mode)
			r, err := c.Request(context.Background(), request("ping"))
			if got := replyText(t, r, err); got != "ping" {
				t.Fatalf("reply %q", got)
			}
			big := make([]byte, 100000) // long-form header, sliced frames
			big[99999] = 7
			r, err = c.Request(context.Background(), codec.NewMessage(codec.KindRequest, 1, 0, payload(big)))
			if got := replyText(t, r, err); len(got) != 100000 || got[99999] != 7 {
				t.Fatalf("large reply of %d bytes", len(got))
			}
		})
	}
}

// Thousands of requests from many goroutines over one connection, with the
// server answering out of order: every reply reaches its own request.
func TestSRMPConcurrentOutOfOrder(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			var mu sync.Mutex
			var held []*codec.Message
			var conn *codec.Conn
			flush := func() { // answer the held requests in shuffled order
				mu.Lock()
				batch, to := held, conn
				held = nil
				mu.Unlock()
				rand.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
				for _, m := range batch {
					echoKept(to, m)
				}
			}
			_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
				mu.Lock()
				conn = c
				held = append(held, msg.(*codec.Message).Keep()) // lent: keep it past the call
				n := len(held)
				mu.Unlock()
				if n >= 50 {
					flush()
				}
			}})
			stop := make(chan struct{})
			var flusher sync.WaitGroup
			flusher.Go(func() { // answer stragglers too
				for {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
						flush()
					}
				}
			})
			defer func() { close(stop); flusher.Wait() }()

			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, m.mode)
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					for i := range 300 {
						body := fmt.Sprintf("%d/%d", g, i)
						r, err := c.Request(context.Background(), request(body))
						if err != nil {
							t.Errorf("request %s: %v", body, err)
							return
						}
						if got := replyText(t, r, nil); got != body {
							t.Errorf("request %s got reply %s", body, got)
							return
						}
					}
				})
			}
			wg.Wait()
			if st := c.Conn().Stats(); st.Unknown != 0 || st.TimedOut != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// A timed-out request's late reply is counted as unknown, released, and
// the connection stays in step. The server holds the slow requests until
// the test has seen both time out.
func TestSRMPTimeoutAndLateReply(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			type held struct {
				c *codec.Conn
				m *codec.Message
			}
			slow := make(chan held, 2)
			_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
				m := msg.(*codec.Message)
				if string(m.PayloadBytes()) == "slow" {
					slow <- held{c, m.Keep()} // answered by the test, late
					return
				}
				echoSRMP(c, m)
			}})
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline(), Timeout: 100 * time.Millisecond}, m.mode)

			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := c.Request(ctx, request("slow")); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("ctx timeout: %v", err)
			}
			if _, err := c.Request(context.Background(), request("slow")); !errors.Is(err, codec.ErrTimeout) {
				t.Fatalf("request timeout: %v", err)
			}
			r, err := c.Request(context.Background(), request("fast"))
			if got := replyText(t, r, err); got != "fast" {
				t.Fatalf("after timeouts: %q", got)
			}
			for range 2 { // the late replies, written before the next reply
				h := <-slow
				echoKept(h.c, h.m)
			}
			// Its reply follows the late ones (in sync mode, this request
			// reads them).
			r, err = c.Request(context.Background(), request("fast"))
			if got := replyText(t, r, err); got != "fast" {
				t.Fatalf("after late replies: %q", got)
			}
			if st := c.Conn().Stats(); st.Unknown != 2 || st.TimedOut != 1 {
				t.Fatalf("stats %+v, want 2 unknown (late) replies and 1 timeout", st)
			}
		})
	}
}

// Closing the connection fails every pending request, blocking or not
// (sync clients have only blocking ones, any of which may be reading).
func TestCloseFailsPendingRequests(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			sessions := make(chan *transport.Session, 1)
			arrived := make(chan struct{}, 16)
			_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(),
				Handler: func(*codec.Conn, any) { arrived <- struct{}{} }, // never answer
				OnOpen:  func(c *codec.Conn) { sessions <- c.Session() },
			})
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()}, m.mode)
			async, blocking := 0, 5
			if m.mode == transport.ReceiveEvent {
				async = 10
			}
			errs := make(chan error, async+blocking)
			for range async {
				if err := c.RequestAsync(context.Background(), request("x"), func(r *codec.Message, err error) { errs <- err }); err != nil {
					t.Fatal(err)
				}
			}
			for range blocking {
				go func() {
					_, err := c.Request(context.Background(), request("y"))
					errs <- err
				}()
			}
			for range async + blocking { // every request is pending: the server has it
				<-arrived
			}
			(<-sessions).Close()
			for range async + blocking {
				if err := <-errs; !errors.Is(err, codec.ErrConnClosed) {
					t.Fatalf("pending request ended with %v", err)
				}
			}
			if _, err := c.Request(context.Background(), request("z")); err == nil {
				t.Fatal("request on a closed connection succeeded")
			}
		})
	}
}

// More than MaxInFlight requests wait for a slot instead of overwriting one.
func TestSRMPInFlightLimitWaits(t *testing.T) {
	leakcheck.Check(t)
	var mu sync.Mutex
	var held []*codec.Message
	var conn *codec.Conn
	allHeld := make(chan struct{})
	_, addr := serve(t, "tcp", codec.Options{Pipeline: srmpPipeline(), Handler: func(c *codec.Conn, msg any) {
		mu.Lock()
		conn = c
		held = append(held, msg.(*codec.Message).Keep())
		if len(held) == codec.MaxInFlightSRMP {
			close(allHeld)
		}
		mu.Unlock()
	}})
	c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: srmpPipeline()})
	replies := make(chan error, 300)
	for range codec.MaxInFlightSRMP {
		c.RequestAsync(context.Background(), request("a"), func(r *codec.Message, err error) {
			if err == nil && (!r.Borrowed() || string(r.PayloadBytes()) != "a") {
				err = fmt.Errorf("async reply %q borrowed=%v", r.PayloadBytes(), r.Borrowed())
			}
			replies <- err
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.RequestAsync(ctx, request("b"), func(*codec.Message, error) { t.Error("callback ran") }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request past the in-flight limit: %v", err)
	}
	select {
	case <-allHeld:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not get every request in flight")
	}
	mu.Lock()
	for _, m := range held {
		echoKept(conn, m)
	}
	held = nil
	mu.Unlock()
	for range codec.MaxInFlightSRMP {
		if err := <-replies; err != nil {
			t.Fatal(err)
		}
	}
}

// Length-field requests match in order (FIFO).
func TestLengthFieldFIFO(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: func(c *codec.Conn, msg any) {
				c.Write(msg) // echo the payload: Write copies the borrowed packet
			}})
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: lfPipeline()}, m.mode)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 200 {
						var b [8]byte
						binary.LittleEndian.PutUint32(b[:], uint32(g))
						binary.LittleEndian.PutUint32(b[4:], uint32(i))
						got, err := c.RequestPacket(context.Background(), payload(b[:]))
						if err != nil {
							t.Error(err)
							return
						}
						if string(got.AppendTo(nil)) != string(b[:]) {
							t.Errorf("FIFO reply mismatch")
						}
						got.Release()
					}
				})
			}
			wg.Wait()
		})
	}
}

// A timed-out FIFO request stays queued, so its late reply does not answer
// the next request.
func TestLengthFieldFIFOTimeoutKeepsStep(t *testing.T) {
	for _, m := range clientModes {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t)
			var slow *packet.Packet // the handler's own: it runs on one goroutine
			_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: func(c *codec.Conn, msg any) {
				p := msg.(*packet.Packet)
				if string(p.Bytes()) == "slow" {
					slow = p.Keep() // answered late: just before the next reply, in order
					return
				}
				if slow != nil {
					c.Write(slow)
					slow = nil
				}
				c.Write(p)
			}})
			c := dialCodec(t, "tcp", addr, codec.Options{Pipeline: lfPipeline()}, m.mode)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := c.RequestPacket(ctx, payload([]byte("slow"))); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("slow request: %v", err)
			}
			r, err := c.RequestPacket(context.Background(), payload([]byte("next")))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(r.AppendTo(nil)); got != "next" {
				t.Fatalf("second request got %q (the late reply)", got)
			}
			r.Release()
			if st := c.Conn().Stats(); st.Unknown != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// A frame past MaxFrame closes the session as a protocol violation.
func TestOversizedFrameAbortsSession(t *testing.T) {
	leakcheck.Check(t)
	closed := make(chan error, 1)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{MaxFrame: 1024})),
		OnClose: func(_ *codec.Conn, err error) { closed <- err }})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte{0x01, 0x01, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x40}) // declares 1 GiB
	err = <-closed
	var e *transport.CloseError
	if !errors.As(err, &e) || e.Reason != transport.ReasonProtocol || !errors.Is(e, codec.ErrFrameTooLarge) {
		t.Fatalf("closed with %v", err)
	}
}

// Over UDP each datagram is framed on its own; one may hold several frames.
func TestUDPDatagramWithSeveralFrames(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "udp", codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(srmpRequests(t, "one", "two"))
	readDatagramReplies(t, conn, "one", "two")
	conn.Write(nil) // end the peer session
}
