package cluster_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/lifenet/lifenet/internal/logattr/logtest"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// Config.Logger is the endpoints' clients' logger when Client.Log is not
// set: their connections' lines go where the cluster's do.
func TestLoggerReachesEndpointClients(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 1, nil)
	rec, log := logtest.New(slog.LevelDebug)
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), roundRobin(t), cluster.Config{Logger: log})
	if _, err := cluster.Call[string](context.Background(), c, "Test/Who", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Find(slog.LevelDebug, "transport: session opened")); n != 1 {
		t.Errorf("%d session lines in the cluster's log, want the endpoint client's 1", n)
	}
}
