package transport_test

import (
	"context"
	"fmt"

	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// An echo server and a client that pulls the reply.
func ExampleServer() {
	ctx := context.Background()
	srv, _ := transport.NewServer(transport.Config{}, transport.Hooks{
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			s.Send(p.Share()) // keep the bytes past this call: share, and Send releases
		},
	})
	defer srv.Close()
	addr, _ := srv.Listen(ctx, "tcp", "127.0.0.1:0")

	c, err := transport.Dial(ctx, "tcp", addr.String(), transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	c.SendBytes([]byte("hello"))
	reply, _ := c.Receive(ctx)
	fmt.Println(string(reply.Bytes()))
	reply.Release()
	// Output: hello
}
