package balance

import (
	"fmt"

	"github.com/lifenet/lifenet/rpc"
)

// Names lists the names [ByName] knows, in the order the CLI shows them.
func Names() []string { return []string{"failover", "round-robin", "weighted", "p2c", "hash"} }

// ByName returns a new balancer of the policy the CLI names name:
// "failover" ([Failover]), "round-robin" ([RoundRobin]), "weighted"
// ([WeightedRoundRobin]), "p2c" ([P2C]) or "hash" ([ConsistentHash]),
// with cfg. Any other name, "race" included (a call strategy of the
// client, not a balancer), is an error wrapping [ErrConfig], as is a cfg
// that does not validate.
func ByName(name string, cfg Config) (rpc.Balancer, error) {
	var (
		b   rpc.Balancer
		err error
	)
	switch name {
	case "failover":
		b, err = wrap(NewFailover(cfg))
	case "round-robin":
		b, err = wrap(NewRoundRobin(cfg))
	case "weighted":
		b, err = wrap(NewWeightedRoundRobin(cfg))
	case "p2c":
		b, err = wrap(NewP2C(cfg))
	case "hash":
		b, err = wrap(NewConsistentHash(cfg))
	case "race":
		return nil, fmt.Errorf("%w: race is a call strategy of the client, not a balancer", ErrConfig)
	default:
		return nil, fmt.Errorf("%w: unknown balancer %q (want failover, round-robin, weighted, p2c or hash)", ErrConfig, name)
	}
	return b, err
}

// wrap turns a constructor's result into an interface that is nil on error
// (not a nil pointer in a non-nil interface).
func wrap[B rpc.Balancer](b B, err error) (rpc.Balancer, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}
