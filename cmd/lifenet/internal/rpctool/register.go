package rpctool

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/etcd"
	"github.com/lifenet/lifenet/rpc"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Bounds of serve's registration in etcd.
const (
	// registerTimeout bounds the first registration: a serve whose etcd
	// is not there fails instead of waiting silently.
	registerTimeout = 10 * time.Second
	// deregisterTimeout bounds the deregistration at shutdown; past it
	// the key goes when its lease expires.
	deregisterTimeout = 5 * time.Second
)

// registerConfig is serve's --register and the flags that go with it.
type registerConfig struct {
	addr      string // etcd://HOST:PORT/SERVICE; "": no registration
	advertise string
	weight    int
	ttl       time.Duration
}

func (r *registerConfig) flags(fs *cliflag.Command) {
	fs.StringVar(&r.addr, "register", "", "register the server in etcd as an endpoint of a service: "+etcdSynopsis)
	fs.StringVar(&r.advertise, "advertise", "", "--register: the HOST:PORT clients dial (default: the address listened on; needed with --host 0.0.0.0 or ::)")
	fs.IntVar(&r.weight, "weight", 1, "--register: the endpoint's weight (what --balancer weighted shares by)")
	fs.DurationVar(&r.ttl, "ttl", etcd.DefaultTTL, "--register: the lease's TTL, the longest a killed server stays registered (whole seconds)")
}

// check is the registration flags' usage check.
func (r registerConfig) check(impl, host string, set map[string]bool) error {
	if r.addr == "" {
		return cliflag.Check(!set["advertise"] && !set["weight"] && !set["ttl"], "--advertise, --weight and --ttl need --register %s", etcdSynopsis)
	}
	if _, err := parseEtcd(r.addr); err != nil {
		return fmt.Errorf("--register %w", err)
	}
	ip := net.ParseIP(host)
	return cliflag.First(
		cliflag.Check(impl == "lifenet", "--register: lifenet servers only (clients through etcd call over SRMP)"),
		checkAdvertise(r.advertise),
		cliflag.Check(r.advertise != "" || ip == nil || !ip.IsUnspecified(), "--register with --host %s needs --advertise HOST:PORT, the address clients dial", host),
		cliflag.Between("weight", r.weight, 1, 1_000_000),
		cliflag.Between("ttl", r.ttl, 2*time.Second, time.Hour),
	)
}

// checkAdvertise checks --advertise: empty, or a HOST:PORT a client can
// dial (not 0.0.0.0 or ::, not port 0).
func checkAdvertise(a string) error {
	if a == "" {
		return nil
	}
	err := checkHostPort(a)
	if host, _, _ := net.SplitHostPort(a); err == nil && net.ParseIP(host).IsUnspecified() {
		err = fmt.Errorf("%s is no address a client can dial (want the HOST:PORT clients dial)", host)
	}
	if err != nil {
		return fmt.Errorf("--advertise %q: %w", a, err)
	}
	return nil
}

// registration is serve's endpoint in etcd; the zero value (no
// --register) does nothing.
type registration struct {
	reg *etcd.Registration
	cli *clientv3.Client
}

// register registers the server, which listens on listened, if
// --register asks; the registration's states go to stderr.
func (r registerConfig) register(ctx context.Context, listened string, stderr io.Writer) (*registration, error) {
	if r.addr == "" {
		return &registration{}, nil
	}
	svc, err := parseEtcd(r.addr)
	if err != nil {
		return nil, err
	}
	cli, err := svc.client()
	if err != nil {
		return nil, err
	}
	ep := rpc.Endpoint{Addr: cmp.Or(r.advertise, listened), Weight: r.weight}
	log := &lockedWriter{w: stderr}
	key := etcd.Key("", svc.service, ep.Addr)
	cfg := etcd.RegisterConfig{TTL: r.ttl, OnState: func(st etcd.State, err error) {
		switch {
		case st == etcd.StateRegistered:
			fmt.Fprintf(log, "lifenet serve: registered %s in %s (key %s, lease TTL %v)\n", ep.Addr, svc, key, r.ttl)
		case st == etcd.StateLost:
			fmt.Fprintf(log, "lifenet serve: the registration in %s was lost (%v); registering again\n", svc, err)
		case err != nil:
			fmt.Fprintf(log, "lifenet serve: deregistering from %s failed (%v): the key goes when its lease expires, within %v\n", svc, err, r.ttl)
		default:
			fmt.Fprintf(log, "lifenet serve: deregistered %s from %s\n", ep.Addr, svc)
		}
	}}
	rctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	reg, err := etcd.Register(rctx, cli, svc.service, ep, cfg)
	if err != nil {
		cli.Close()
		if ctx.Err() == nil {
			return nil, fmt.Errorf("%s: not registered within %v (is etcd running there?): %w", svc, registerTimeout, err)
		}
		return nil, fmt.Errorf("%s: interrupted while registering: %w", svc, err)
	}
	return &registration{reg: reg, cli: cli}, nil
}

// close deregisters (its outcome goes to stderr, through OnState) and
// closes the etcd client.
func (r *registration) close() {
	if r.reg == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deregisterTimeout)
	defer cancel()
	r.reg.Close(ctx)
	r.cli.Close()
}
