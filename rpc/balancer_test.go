package rpc_test

import (
	"context"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

func TestBalanceKeyRoundTrip(t *testing.T) {
	if k := rpc.BalanceKey(context.Background()); k != "" {
		t.Fatalf("BalanceKey of a bare ctx = %q", k)
	}
	if k := rpc.BalanceKey(rpc.WithBalanceKey(context.Background(), "user-7")); k != "user-7" {
		t.Fatalf("BalanceKey = %q, want user-7", k)
	}
}
