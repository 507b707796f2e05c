package etcd_test

import (
	"context"
	"fmt"
	"log"
	"net/url"
	"os"
	"time"

	"github.com/lifenet/lifenet/etcd"
	"github.com/lifenet/lifenet/rpc"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startEmbedded starts a one-member etcd on loopback ports the system
// picks, for the example only: a deployment runs its own etcd cluster.
func startEmbedded(dir string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	loopback := []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = loopback, loopback
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = loopback, loopback
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(20 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd not ready")
	}
}

// A server registers in etcd once it listens and deregisters first thing
// at shutdown; a client's resolver sees it come and go.
func Example() {
	dir, err := os.MkdirTemp("", "lifenet-etcd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	e, err := startEmbedded(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Clients[0].Addr().String()}, Logger: zap.NewNop()})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The server: listen, then register.
	srv, err := rpc.NewServer(rpc.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	addr, err := srv.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	reg, err := etcd.Register(ctx, cli, "calc", rpc.Endpoint{Addr: addr.String(), Zone: "a"}, etcd.RegisterConfig{})
	if err != nil {
		log.Fatal(err)
	}

	// A client: resolve the service.
	res, err := etcd.NewResolver(cli, "calc", etcd.ResolverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	sets := make(chan []rpc.Endpoint, 4)
	go res.Watch(ctx, func(eps []rpc.Endpoint) { sets <- eps })
	eps := <-sets
	fmt.Println(len(eps), eps[0].Addr == addr.String(), eps[0].Zone)

	// The server's shutdown: deregister, so that clients stop choosing it,
	// then finish the calls in progress.
	if err := reg.Close(ctx); err != nil {
		log.Fatal(err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(<-sets))
	// Output:
	// 1 true a
	// 0
}
