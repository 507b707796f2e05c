package codec_test

// Codec echo benchmarks mirroring NewLife's codec echo scenario (32-byte
// frames decoded, handed to a handler, answered), each beside a plain std-net
// echo of 32-byte frames in the same run:
//
//	go test -run '^$' -bench CodecEcho -benchmem -count 3 ./codec
//
// One op is one echoed 32-byte frame (SRMP: 4-byte header + 28 bytes;
// length field: 2 + 30). serial keeps one request in flight per
// connection (serial-sync: the same with the clients in ReceiveSync mode);
// window keeps 255 (SRMP) or 256 (length field, and raw) in flight.
// allocs/op and B/op count client and server together.
//
// BenchmarkFrameEcho measures the server's per-frame cost alone: one
// connection, batches of 256 frames per write, codec against a plain
// per-frame std-net loop:
//
//	go test -run '^$' -bench FrameEcho -benchmem -count 5 ./codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

const frameSize = 32

// benchServerConfig lifts the per-IP connection limit (default 1000) for
// the 1024-connection rows; every client is 127.0.0.1.
var benchServerConfig = transport.Config{MaxConnsPerIP: 4096}

func BenchmarkCodecEcho(b *testing.B) {
	// lengthfield-server: the raw client against lifenet's length-field
	// echo server (which decodes and re-encodes every frame): the server
	// compared with the raw echo loop, client held equal.
	for _, kind := range []string{"srmp", "lengthfield", "lengthfield-server", "raw"} {
		for _, mode := range []string{"serial", "serial-sync", "window"} {
			if mode == "serial-sync" && (kind == "raw" || kind == "lengthfield-server") {
				continue // raw clients always read on the caller's goroutine
			}
			for _, conns := range []int{1, 4, 16, 64, 256, 1024} {
				b.Run(fmt.Sprintf("codec=%s/mode=%s/conns=%d", kind, mode, conns), func(b *testing.B) {
					switch kind {
					case "raw":
						benchRawEcho(b, rawEchoServer(b), mode == "window", conns)
						return
					case "lengthfield-server":
						benchRawEcho(b, lifenetEchoServer(b), mode == "window", conns)
						return
					}
					benchCodecEcho(b, kind, mode, conns)
				})
			}
		}
	}
}

// echoLF echoes a length-field payload: Write copies the borrowed packet.
func echoLF(c *codec.Conn, msg any) { c.Write(msg) }

// echoOptions returns the server options for a codec kind.
func echoOptions(kind string) codec.Options {
	if kind == "srmp" {
		return codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP}
	}
	return codec.Options{Pipeline: lfPipeline(), Handler: echoLF}
}

// startCodecServer starts a codec server on loopback TCP and returns its
// address.
func startCodecServer(b *testing.B, cfg transport.Config, opts codec.Options) string {
	srv, err := codec.NewServer(cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return a.String()
}

func newSRMPRequest() *codec.Message {
	return codec.NewMessage(codec.KindRequest, codec.FlagPacket, 0, packet.GetWithHeadroom(8, frameSize-4))
}

func newLFRequest() *packet.Packet { return packet.GetWithHeadroom(8, frameSize-2) }

// benchCodecEcho runs lifenet's codec on both ends; mode serial-sync dials
// the clients in transport.ReceiveSync (the waiting request reads).
func benchCodecEcho(b *testing.B, kind, mode string, conns int) {
	addr := startCodecServer(b, benchServerConfig, echoOptions(kind))
	copts := codec.Options{Pipeline: srmpPipeline()}
	if kind != "srmp" {
		copts = codec.Options{Pipeline: lfPipeline()}
	}
	var ccfg transport.ClientConfig
	if mode == "serial-sync" {
		ccfg.Mode = transport.ReceiveSync
	}
	clients := make([]*codec.Client, conns)
	for i := range clients {
		c, err := codec.Dial(context.Background(), "tcp", addr, ccfg, copts)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
		serialLoop(b, c, kind, 1) // connection set-up (buffers, matcher) stays out of the measurement
	}
	per := (b.N + conns - 1) / conns
	b.SetBytes(frameSize)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, c := range clients {
		if mode == "window" {
			wg.Go(func() { windowLoop(b, c, kind, per) })
		} else {
			wg.Go(func() { serialLoop(b, c, kind, per) })
		}
	}
	wg.Wait()
	b.StopTimer()
}

func serialLoop(b *testing.B, c *codec.Client, kind string, n int) {
	ctx := context.Background()
	for range n {
		if kind == "srmp" {
			r, err := c.Request(ctx, newSRMPRequest())
			if err != nil {
				b.Error(err)
				return
			}
			r.Release()
			continue
		}
		r, err := c.RequestPacket(ctx, newLFRequest())
		if err != nil {
			b.Error(err)
			return
		}
		r.Release()
	}
}

// windowLoop keeps as many requests outstanding as the in-flight limit
// allows: each reply's callback (which borrows the reply) frees a slot that
// the loop refills.
func windowLoop(b *testing.B, c *codec.Client, kind string, n int) {
	ctx := context.Background()
	var done sync.WaitGroup
	var failed atomic.Bool
	done.Add(n)
	fail := func(err error) {
		if err != nil {
			failed.Store(true)
		}
		done.Done()
	}
	msgCB := func(_ *codec.Message, err error) { fail(err) }
	pktCB := func(_ *packet.Packet, err error) { fail(err) }
	conn := c.Conn()
	for range n {
		// RequestAsync waits for a free slot: the window never exceeds
		// the in-flight limit.
		var err error
		if kind == "srmp" {
			err = conn.RequestAsync(ctx, newSRMPRequest(), msgCB)
		} else {
			err = conn.RequestPacketAsync(ctx, newLFRequest(), pktCB)
		}
		if err != nil {
			b.Error(err)
			return
		}
	}
	done.Wait()
	if failed.Load() {
		b.Error("a windowed request failed")
	}
}

// rawEchoServer starts the std-net echo loop and returns its address.
func rawEchoServer(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := baseline.Serve(l, true)
	b.Cleanup(srv.Close)
	return l.Addr().String()
}

// lifenetEchoServer starts lifenet's length-field echo server (2-byte
// header: a 32-byte frame is 2 + 30) and returns its address.
func lifenetEchoServer(b *testing.B) string {
	return startCodecServer(b, benchServerConfig, echoOptions("lengthfield"))
}

// benchRawEcho drives an echo server with plain std-net clients writing
// 32-byte frames (valid length-field frames: 1E 00 + 30 bytes) and reading
// them back, serially or with a window of 256 frames in flight.
func benchRawEcho(b *testing.B, addr string, window bool, conns int) {
	clients := make([]net.Conn, conns)
	for i := range clients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
		rawSerial(b, c, 1) // connection set-up stays out of the measurement
	}
	per := (b.N + conns - 1) / conns
	b.SetBytes(frameSize)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			if window {
				rawWindow(b, c, per)
			} else {
				rawSerial(b, c, per)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

// rawFrame is a 32-byte length-field frame: 2-byte LE length 30, payload.
func rawFrame() []byte {
	f := make([]byte, frameSize)
	f[0] = frameSize - 2
	return f
}

func rawSerial(b *testing.B, c net.Conn, n int) {
	out, in := rawFrame(), make([]byte, frameSize)
	for range n {
		if _, err := c.Write(out); err != nil {
			b.Error(err)
			return
		}
		if _, err := io.ReadFull(c, in); err != nil {
			b.Error(err)
			return
		}
	}
}

// rawWindow writes frames while a reader takes the echoes back, never more
// than 256 frames ahead.
func rawWindow(b *testing.B, c net.Conn, n int) {
	const window = 256
	credits := make(chan struct{}, window)
	for range window {
		credits <- struct{}{}
	}
	go func() {
		out := rawFrame()
		for range n {
			<-credits
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}()
	in := make([]byte, 64<<10)
	for got := 0; got < n*frameSize; {
		k, err := c.Read(in)
		if err != nil {
			b.Error(err)
			return
		}
		for f := got / frameSize; f < (got+k)/frameSize; f++ {
			credits <- struct{}{}
		}
		got += k
	}
}

// frameBatch is how many 32-byte frames BenchmarkFrameEcho's client writes
// at once (and reads back before the next batch).
const frameBatch = 256

// BenchmarkFrameEcho is the per-frame cost of a server: one loopback
// connection whose client writes batches of 256 32-byte frames in one
// write and reads the 256 echoes back. impl=codec is codec.NewServer
// (length field: Conn.Write of each borrowed payload; SRMP: Conn.Reply of
// each request with its own payload); impl=std is a plain loop: read into
// a 64 KiB buffer, call a handler per complete frame that writes its
// reply into a 64 KiB bufio.Writer, flush once per read, carry a partial
// frame to the next read. One op is one frame; allocs count both ends.
func BenchmarkFrameEcho(b *testing.B) {
	for _, format := range []string{"lengthfield", "srmp"} {
		for _, impl := range []string{"codec", "std"} {
			b.Run(fmt.Sprintf("format=%s/impl=%s", format, impl), func(b *testing.B) {
				var addr string
				if impl == "codec" {
					addr = startCodecServer(b, transport.Config{}, echoOptions(format))
				} else {
					addr = startStdFrameServer(b, format)
				}
				benchFrameEcho(b, addr, format)
			})
		}
	}
}

// frameEchoBatch returns a batch of frames of format and the echo a
// correct server sends back.
func frameEchoBatch(format string) (out, want []byte) {
	for i := range frameBatch {
		f := make([]byte, frameSize)
		for j := range f {
			f[j] = byte(i + j)
		}
		if format == "srmp" {
			f[0] = byte(codec.KindRequest)<<6 | codec.FlagBinary
			f[1] = byte(i)
			binary.LittleEndian.PutUint16(f[2:], frameSize-4)
		} else {
			binary.LittleEndian.PutUint16(f, frameSize-2)
		}
		out = append(out, f...)
		if format == "srmp" {
			f[0] = byte(codec.KindReply)<<6 | codec.FlagBinary // same flag and sequence
		}
		want = append(want, f...)
	}
	return out, want
}

func benchFrameEcho(b *testing.B, addr, format string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	out, want := frameEchoBatch(format)
	in := make([]byte, len(out))
	batch := func() error {
		if _, err := c.Write(out); err != nil {
			return err
		}
		_, err := io.ReadFull(c, in)
		return err
	}
	// One checked batch outside the measurement: the server answers
	// correctly, and its connection is set up.
	if err := batch(); err != nil {
		b.Fatal(err)
	}
	if !bytes.Equal(in, want) {
		b.Fatalf("server %s echoed wrong bytes", addr)
	}
	b.SetBytes(frameSize)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; n += frameBatch {
		if err := batch(); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/frame")
}

// startStdFrameServer starts the plain per-frame loop (internal/baseline,
// no lifenet code) on loopback TCP and returns its address; the
// benchmark's cleanup stops it.
func startStdFrameServer(b *testing.B, format string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	f, err := baseline.ParseFormat(format)
	if err != nil {
		b.Fatal(err)
	}
	srv := baseline.ServeFrames(l, f, baseline.Echo(f))
	b.Cleanup(srv.Close)
	return l.Addr().String()
}
