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

// copyPacketInto is a PacketUse: it copies the reply into dst (an
// *intoDst), and refuses a reply "refuse" with errUse.
func copyPacketInto(dst any, reply *packet.Packet) error {
	d := dst.(*intoDst)
	d.payload, d.borrowed = string(reply.Bytes()), reply.Borrowed()
	if d.payload == "refuse" {
		return errUse
	}
	return nil
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

// Concurrent RequestPacketInto calls on a ReceiveSync client each decode
// their own reply, in order, whether their goroutine read it or another
// did.
func TestRequestPacketIntoConcurrent(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: echoLF})
	conn := dialCodec(t, "tcp", addr, codec.Options{Pipeline: lfPipeline()}, transport.ReceiveSync).Conn()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				body := fmt.Sprintf("%d/%d", g, i)
				var d intoDst
				used, err := conn.RequestPacketInto(context.Background(), packet.Wrap([]byte(body)), copyPacketInto, &d)
				if !used || err != nil || d.payload != body {
					t.Errorf("%s: used %v, %v, decoded %q", body, used, err, d.payload)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A panic in use while it runs on the read reaches its caller, and the
// read turn is given back: the requests after it get their replies.
func TestRequestPacketIntoPanicReachesTheCaller(t *testing.T) {
	leakcheck.Check(t)
	_, addr := serve(t, "tcp", codec.Options{Pipeline: lfPipeline(), Handler: echoLF})
	conn := dialCodec(t, "tcp", addr, codec.Options{Pipeline: lfPipeline()}, transport.ReceiveSync).Conn()
	boom := func(any, *packet.Packet) error { panic("boom") }
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v, want use's panic", v)
			}
		}()
		conn.RequestPacketInto(context.Background(), packet.Wrap([]byte("x")), boom, nil)
		t.Fatal("RequestPacketInto returned past use's panic")
	}()
	for i := range 4 {
		body := fmt.Sprint(i)
		r, err := conn.RequestPacket(context.Background(), packet.Wrap([]byte(body)))
		if err != nil || string(r.Bytes()) != body {
			t.Fatalf("after the panic: %q, %v, want %q", r.Bytes(), err, body)
		}
		r.Release()
	}
}
