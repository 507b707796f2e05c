package rpc_test

import (
	"context"
	"fmt"

	"github.com/lifenet/lifenet/rpc"
)

// A server with one action, and a client calling it over TCP.
func Example_serverAndClient() {
	ctx := context.Background()
	srv, _ := rpc.NewServer(rpc.Config{})
	defer srv.Close()
	err := rpc.Handle(srv, "Greeter/Hello", func(_ context.Context, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	if err != nil {
		panic(err)
	}
	addr, err := srv.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}

	cl, err := rpc.Dial(ctx, "tcp://"+addr.String(), rpc.ClientConfig{})
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	greeting, err := rpc.Call[string](ctx, cl, "Greeter/Hello", map[string]string{"name": "NewLife"})
	fmt.Println(greeting, err)
	// Output: Hello, NewLife! <nil>
}

// CalculatorController's exported methods become the actions
// Calculator/Add and Calculator/Negate.
type CalculatorController struct{}

// AddArgs holds Add's parameters: NewLife's several parameters are the
// fields of one struct, bound from the JSON object by name.
type AddArgs struct{ A, B int }

func (CalculatorController) Add(a AddArgs) int { return a.A + a.B }

func (CalculatorController) Negate(ctx context.Context, n int) (int, error) { return -n, nil }

func ExampleServer_Register() {
	srv, _ := rpc.NewServer(rpc.Config{})
	defer srv.Close()
	if err := srv.Register(CalculatorController{}); err != nil {
		panic(err)
	}
	// Server.Process runs a request body without a socket.
	for _, call := range []struct {
		action string
		args   any
	}{{"Calculator/Add", AddArgs{2, 3}}, {"calculator/negate", 7}} {
		req, _ := rpc.AppendRequest(nil, call.action, call.args)
		reply, isErr, _ := srv.Process(context.Background(), req, nil)
		// A reply body is the action name, then the result's length and text.
		fmt.Printf("%s → %s (error: %v)\n", call.action, reply[1+reply[0]+4:], isErr)
	}
	// Output:
	// Calculator/Add → 5 (error: false)
	// calculator/negate → -7 (error: false)
}
