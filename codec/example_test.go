package codec_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// An echo server for length-field frames (a 2-byte little-endian length,
// then the payload). The handler borrows each payload: Write copies it.
func Example_echoServer() {
	srv, err := codec.NewServer(transport.Config{}, codec.Options{
		Pipeline: codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{}, codec.FramerConfig{})),
		Handler:  func(c *codec.Conn, payload any) { c.Write(payload) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	addr, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}

	conn, err := net.Dial("tcp", addr.String()) // any client will do
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	conn.Write([]byte{5, 0, 'h', 'e', 'l', 'l', 'o'})
	echo := make([]byte, 7)
	io.ReadFull(conn, echo)
	fmt.Printf("% x\n", echo)
	// Output: 05 00 68 65 6c 6c 6f
}

// An SRMP client: Request numbers each request and waits for the reply
// with its sequence number. Replies of Request are owned: release them.
// (The server answers in upper case; its handler borrows the request.)
func Example_requestClient() {
	ctx := context.Background()
	pipeline := codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}))
	srv, err := codec.NewServer(transport.Config{}, codec.Options{Pipeline: pipeline,
		Handler: func(c *codec.Conn, msg any) {
			req := msg.(*codec.Message)
			c.ReplyBytes(req, bytes.ToUpper(req.PayloadBytes()))
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	addr, err := srv.Listen(ctx, "tcp", "127.0.0.1:0") // an SRMP server of its own
	if err != nil {
		fmt.Println(err)
		return
	}

	client, err := codec.Dial(ctx, "tcp", addr.String(), transport.ClientConfig{}, codec.Options{Pipeline: pipeline})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	for _, word := range []string{"hello", "world"} {
		reply, err := client.RequestBytes(ctx, codec.FlagString, []byte(word))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(reply.Seq, string(reply.PayloadBytes()))
		reply.Release()
	}
	// Output:
	// 1 HELLO
	// 2 WORLD
}

// A client in ReceiveSync mode has no receive goroutine: each Request
// reads its own reply (taking turns with concurrent ones), which saves a
// goroutine hand-off per call. Length-field frames are matched in order.
func ExampleDial_receiveSync() {
	ctx := context.Background()
	pipeline := codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{}, codec.FramerConfig{}))
	srv, _ := codec.NewServer(transport.Config{}, codec.Options{
		Pipeline: pipeline,
		Handler:  func(c *codec.Conn, msg any) { c.Write(msg) }, // echo the frame's payload
	})
	defer srv.Close()
	addr, _ := srv.Listen(ctx, "tcp", "127.0.0.1:0")

	client, err := codec.Dial(ctx, "tcp", addr.String(), transport.ClientConfig{Mode: transport.ReceiveSync},
		codec.Options{Pipeline: pipeline})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	for _, word := range []string{"one", "two"} {
		body := packet.Get(0)
		body.Write([]byte(word))
		reply, err := client.RequestPacket(ctx, body)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(reply.AppendTo(nil)))
		reply.Release()
	}
	// Output:
	// one
	// two
}

// A handler that needs a message after it returns keeps it: Keep gives an
// owned copy (the borrowed one is reused for the next frame).
func ExampleMessage_Keep() {
	var kept []*codec.Message
	chain := codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{})).NewChain(nil, func(msg any) error {
		kept = append(kept, msg.(*codec.Message).Keep())
		return nil
	})
	in := packet.Wrap([]byte{0x41, 0, 2, 0, 'h', 'i', 0x41, 0, 3, 0, 'y', 'o', 'u'}) // two one-way messages
	chain.Read(in)
	in.Release()
	for _, m := range kept {
		fmt.Println(m.Borrowed(), string(m.PayloadBytes()))
		m.Release()
	}
	// Output:
	// false hi
	// false you
}
