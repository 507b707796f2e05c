package etcd

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
)

// ClientConfig returns a clientv3.Config for endpoints with the settings
// the timings of this package assume: gRPC's reconnect backoff bounded at
// 1 s (gRPC's default grows to 120 s, so a client could come back minutes
// after etcd does, past every lease's TTL), a 5 s dial timeout, and
// keep-alive pings every 10 s (etcd refuses them more often than every
// 5 s) that give up on a connection after 3 s without an answer, so that a
// half-open connection to an etcd host that vanished is noticed. Set
// further fields (TLS, credentials, Logger) on the result.
func ClientConfig(endpoints ...string) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           grpcbackoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 2 * time.Second,
		})},
	}
}
