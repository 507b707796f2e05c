package balance_test

import (
	"fmt"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
)

// A balancer over three endpoints: weighted round-robin sends 1, 2 and 3
// of every 6 calls to them; an endpoint reported unavailable is skipped
// until its shield ends.
func Example_weighted() {
	b, err := balance.NewWeightedRoundRobin(balance.Config{ShieldTime: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	b.Update([]rpc.Endpoint{
		{Addr: "10.0.0.1:5500", Weight: 1},
		{Addr: "10.0.0.2:5500", Weight: 2},
		{Addr: "10.0.0.3:5500", Weight: 3},
	})
	calls := map[string]int{}
	for range 600 {
		addr, err := b.Pick(rpc.PickInfo{Action: "Api/Info"})
		if err != nil {
			panic(err)
		}
		calls[addr]++
		// … the call to addr; then report how it ended:
		b.Done(addr, rpc.PickResult{Latency: time.Millisecond})
	}
	fmt.Println(calls)

	// The third server's connection is refused: it is shielded.
	b.Done("10.0.0.3:5500", rpc.PickResult{Unavailable: true})
	addr, _ := b.Pick(rpc.PickInfo{Exclude: "10.0.0.1:5500"})
	fmt.Println(addr)
	// Output:
	// map[10.0.0.1:5500:100 10.0.0.2:5500:200 10.0.0.3:5500:300]
	// 10.0.0.2:5500
}

// ByName makes the balancer the CLI's --balancer flag names.
func ExampleByName() {
	b, err := balance.ByName("failover", balance.Config{})
	if err != nil {
		panic(err)
	}
	b.Update([]rpc.Endpoint{{Addr: "primary:5500"}, {Addr: "backup:5500"}})
	addr, _ := b.Pick(rpc.PickInfo{})
	fmt.Println(addr)
	b.Done(addr, rpc.PickResult{Unavailable: true})
	addr, _ = b.Pick(rpc.PickInfo{})
	fmt.Println(addr)
	_, err = balance.ByName("race", balance.Config{})
	fmt.Println(err)
	// Output:
	// primary:5500
	// backup:5500
	// balance: invalid config: race is a call strategy of the client, not a balancer
}
