package codec_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// An SRMP server that answers every request, and a client that asks.
func Example() {
	ctx := context.Background()
	pipeline := codec.NewPipeline(codec.SRMP(codec.FramerConfig{}))
	srv, _ := transport.NewServer(transport.Config{}, codec.Hooks(codec.Options{
		Pipeline: pipeline,
		Handler: func(c *codec.Conn, msg any) {
			req := msg.(*codec.Message)
			defer req.Release()
			reply := packet.Get(0)
			reply.Write(bytes.ToUpper(req.Payload.AppendTo(nil)))
			c.Reply(req, reply)
		},
	}))
	defer srv.Close()
	addr, _ := srv.Listen(ctx, "tcp", "127.0.0.1:0")

	client, err := codec.Dial(ctx, "tcp", addr.String(), transport.ClientConfig{},
		codec.Options{Pipeline: pipeline, Match: codec.MatchSRMP})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	body := packet.Get(0)
	body.Write([]byte("hello"))
	r, err := client.Request(ctx, codec.NewMessage(codec.KindRequest, codec.FlagString, 0, body))
	if err != nil {
		fmt.Println(err)
		return
	}
	reply := r.(*codec.Message)
	fmt.Println(string(reply.Payload.AppendTo(nil)), reply.Seq)
	reply.Release()
	// Output: HELLO 1
}

// A client in ReceiveSync mode has no receive goroutine: each Request
// reads its own reply (taking turns with concurrent ones), which saves a
// goroutine hand-off per call. Length-field frames are matched in order.
func ExampleDial_receiveSync() {
	ctx := context.Background()
	pipeline := codec.NewPipeline(codec.LengthFieldFraming(codec.LengthField{}, codec.FramerConfig{}))
	srv, _ := transport.NewServer(transport.Config{}, codec.Hooks(codec.Options{
		Pipeline: pipeline,
		Handler:  func(c *codec.Conn, msg any) { c.Write(msg) }, // echo the frame's payload
	}))
	defer srv.Close()
	addr, _ := srv.Listen(ctx, "tcp", "127.0.0.1:0")

	client, err := codec.Dial(ctx, "tcp", addr.String(), transport.ClientConfig{Mode: transport.ReceiveSync},
		codec.Options{Pipeline: pipeline, Match: codec.MatchFIFO})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	for _, word := range []string{"one", "two"} {
		body := packet.Get(0)
		body.Write([]byte(word))
		r, err := client.Request(ctx, body)
		if err != nil {
			fmt.Println(err)
			return
		}
		reply := r.(*packet.Packet)
		fmt.Println(string(reply.AppendTo(nil)))
		reply.Release()
	}
	// Output:
	// one
	// two
}
