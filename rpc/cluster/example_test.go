package cluster_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// Three servers in one process, a static list of them, and a client that
// spreads its calls round-robin.
func Example() {
	ctx := context.Background()
	var eps []rpc.Endpoint
	for _, name := range []string{"A", "B", "C"} {
		srv, err := rpc.NewServer(rpc.Config{})
		if err != nil {
			log.Fatal(err)
		}
		defer srv.Close()
		if err := rpc.Handle(srv, "Who/Am", func(context.Context, struct{}) (string, error) { return name, nil }); err != nil {
			log.Fatal(err)
		}
		addr, err := srv.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		eps = append(eps, rpc.Endpoint{Addr: addr.String()})
	}

	b, err := balance.NewRoundRobin(balance.Config{})
	if err != nil {
		log.Fatal(err)
	}
	cfg := cluster.Config{Retry: cluster.RetryPolicy{MaxAttempts: 3}}
	client, err := cluster.Dial(ctx, rpc.StaticResolver(eps), b, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	var seen []string
	for range 6 {
		who, err := cluster.Call[string](ctx, client, "Who/Am", nil)
		if err != nil {
			log.Fatal(err)
		}
		seen = append(seen, who)
	}
	slices.Sort(seen)
	fmt.Println(seen)
	// Output: [A A B B C C]
}
