package codec_test

// Codec echo benchmarks mirroring seed 001, each beside a plain std-net
// echo of 32-byte frames in the same run:
//
//	go test -run '^$' -bench CodecEcho -benchmem -count 3 ./codec
//
// One op is one echoed 32-byte frame (SRMP: 4-byte header + 28 bytes;
// length field: 2 + 30). serial keeps one request in flight per
// connection (serial-sync: the same with the clients in ReceiveSync mode); window keeps 255 (SRMP) or 256 (length field, and raw)
// in flight. allocs/op and B/op count client and server together.

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/rawnet"
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

// echoOptions returns the server options for a codec kind.
func echoOptions(kind string) codec.Options {
	if kind == "srmp" {
		return codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP}
	}
	return codec.Options{Pipeline: lfPipeline(), Handler: func(c *codec.Conn, msg any) { c.Write(msg) }}
}

func newRequest(kind string) any {
	if kind == "srmp" {
		p := packet.GetWithHeadroom(8, frameSize-4)
		return codec.NewMessage(codec.KindRequest, codec.FlagPacket, 0, p)
	}
	return packet.GetWithHeadroom(8, frameSize-2)
}

// benchCodecEcho runs lifenet's codec on both ends; mode serial-sync dials
// the clients in transport.ReceiveSync (the waiting request reads).
func benchCodecEcho(b *testing.B, kind, mode string, conns int) {
	srv, err := transport.NewServer(benchServerConfig, codec.Hooks(echoOptions(kind)))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	addr, _ := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	copts := codec.Options{Pipeline: srmpPipeline(), Match: codec.MatchSRMP}
	if kind != "srmp" {
		copts = codec.Options{Pipeline: lfPipeline(), Match: codec.MatchFIFO}
	}
	var ccfg transport.ClientConfig
	if mode == "serial-sync" {
		ccfg.Mode = transport.ReceiveSync
	}
	clients := make([]*codec.Client, conns)
	for i := range clients {
		c, err := codec.Dial(context.Background(), "tcp", addr.String(), ccfg, copts)
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
		r, err := c.Request(ctx, newRequest(kind))
		if err != nil {
			b.Error(err)
			return
		}
		codecReleaseAny(r)
	}
}

// windowLoop keeps as many requests outstanding as the in-flight limit
// allows: each reply's callback frees a slot that the loop refills.
func windowLoop(b *testing.B, c *codec.Client, kind string, n int) {
	ctx := context.Background()
	var done sync.WaitGroup
	var failed atomic.Bool
	done.Add(n)
	cb := func(r any, err error) {
		if err != nil {
			failed.Store(true)
		}
		codecReleaseAny(r)
		done.Done()
	}
	conn := c.Conn()
	for range n {
		// RequestAsync waits for a free slot: the window never exceeds
		// the in-flight limit.
		if err := conn.RequestAsync(ctx, newRequest(kind), cb); err != nil {
			b.Error(err)
			return
		}
	}
	done.Wait()
	if failed.Load() {
		b.Error("a windowed request failed")
	}
}

func codecReleaseAny(r any) {
	switch v := r.(type) {
	case *codec.Message:
		v.Release()
	case *packet.Packet:
		v.Release()
	}
}

// rawEchoServer starts the std-net echo loop and returns its address.
func rawEchoServer(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := rawnet.Serve(l, true)
	b.Cleanup(srv.Close)
	return l.Addr().String()
}

// lifenetEchoServer starts lifenet's length-field echo server (2-byte
// header: a 32-byte frame is 2 + 30) and returns its address.
func lifenetEchoServer(b *testing.B) string {
	srv, err := transport.NewServer(benchServerConfig, codec.Hooks(echoOptions("lengthfield")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	a, _ := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	return a.String()
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
