package rpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

func TestStaticResolverReportsOnceAndWaits(t *testing.T) {
	list := rpc.StaticResolver{{Addr: "127.0.0.1:1", Weight: 2}, {Addr: "127.0.0.1:2"}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var got [][]rpc.Endpoint
	err := list.Watch(ctx, func(eps []rpc.Endpoint) { got = append(got, eps) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Watch = %v, want the context's error", err)
	}
	if len(got) != 1 || len(got[0]) != 2 || got[0][0].Addr != "127.0.0.1:1" || got[0][0].Weight != 2 {
		t.Fatalf("updates = %+v, want the list once", got)
	}
	got[0][0].Addr = "changed" // the update owns its slice
	if list[0].Addr != "127.0.0.1:1" {
		t.Fatal("the update's slice aliases the resolver's list")
	}
}

func TestStaticResolverEmptyFails(t *testing.T) {
	err := rpc.StaticResolver{}.Watch(context.Background(), func([]rpc.Endpoint) { t.Error("update called") })
	if !errors.Is(err, rpc.ErrNoEndpoints) {
		t.Fatalf("Watch = %v, want ErrNoEndpoints", err)
	}
}
