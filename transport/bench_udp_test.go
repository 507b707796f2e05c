package transport_test

// UDP benchmarks, each beside the plain std-net loop in the same run:
//
//	go test -run '^$' -bench 'UDP' -benchmem ./transport
//
// One op is one 1 KiB datagram.

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// BenchmarkUDPSend: a client's one-way send from a bound socket to a
// sink that nobody reads (the kernel drops what overflows its buffer, so
// no send waits). impl=std is WriteToUDPAddrPort in a loop; impl=lifenet
// is Client.Send of a wrapped buffer, as `lifenet load --udp` sends.
func BenchmarkUDPSend(b *testing.B) {
	for _, impl := range []string{"lifenet", "std"} {
		b.Run("impl="+impl, func(b *testing.B) {
			sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				b.Fatal(err)
			}
			defer sink.Close()
			to := sink.LocalAddr().(*net.UDPAddr).AddrPort()
			buf := make([]byte, 1024)
			var send func() error
			if impl == "std" {
				c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				send = func() error { _, err := c.WriteToUDPAddrPort(buf, to); return err }
			} else {
				c, err := transport.Dial(context.Background(), "udp", to.String(),
					transport.ClientConfig{Mode: transport.ReceiveSync, LocalAddr: "127.0.0.1:0"}, transport.Hooks{})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				send = func() error { return c.Send(packet.Wrap(buf)) }
			}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if err := send(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUDPReceive: a server that counts datagrams from one sender.
// The sender sends bursts of udpBurst and waits until the server has
// counted them, so that nothing is lost and one op is one datagram
// received. impl=std is a ReadFromUDPAddrPort loop (lifenet load --impl
// raw); impl=lifenet is the transport's UDP server.
func BenchmarkUDPReceive(b *testing.B) {
	const udpBurst = 64
	for _, impl := range []string{"lifenet", "std"} {
		b.Run("impl="+impl, func(b *testing.B) {
			var n atomic.Uint64
			var addr net.Addr
			if impl == "std" {
				conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
				if err != nil {
					b.Fatal(err)
				}
				var wg sync.WaitGroup
				wg.Go(func() {
					buf := make([]byte, 64<<10)
					for {
						k, _, err := conn.ReadFromUDPAddrPort(buf)
						if errors.Is(err, net.ErrClosed) {
							return
						}
						if k > 0 {
							n.Add(1)
						}
					}
				})
				defer func() { conn.Close(); wg.Wait() }()
				addr = conn.LocalAddr()
			} else {
				srv, err := transport.NewServer(transport.Config{NoSessionRegistry: true},
					transport.Hooks{OnReceive: func(*transport.Session, *packet.Packet) { n.Add(1) }})
				if err != nil {
					b.Fatal(err)
				}
				defer srv.Close()
				if addr, err = srv.Listen(context.Background(), "udp", "127.0.0.1:0"); err != nil {
					b.Fatal(err)
				}
			}
			c, err := net.DialUDP("udp", nil, addr.(*net.UDPAddr))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, 1024)
			sent := uint64(0)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if sent++; sent%udpBurst == 0 {
					waitCount(b, &n, sent)
				}
			}
			waitCount(b, &n, sent)
		})
	}
}

// waitCount waits until n reaches want; a datagram lost on loopback fails
// the benchmark rather than hanging it.
func waitCount(b *testing.B, n *atomic.Uint64, want uint64) {
	for deadline := time.Now().Add(5 * time.Second); n.Load() < want; {
		if time.Now().After(deadline) {
			b.Fatalf("received %d of %d datagrams", n.Load(), want)
		}
		time.Sleep(10 * time.Microsecond)
	}
}
