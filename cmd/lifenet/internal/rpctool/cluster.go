package rpctool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/etcd"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
	"github.com/lifenet/lifenet/rpc/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// raceName is the --balancer that is no balancer of package balance but
// the cluster client's Race (NewLife's): each call goes to one endpoint,
// then to another each --stagger without an answer, the first answer
// winning; the endpoints come from round-robin picks.
const raceName = "race"

// balancerNames are --balancer's names: package balance's policies, then
// race.
func balancerNames() []string { return append(balance.Names(), raceName) }

// checkBalancer is --balancer's usage check.
func checkBalancer(name string) error {
	return cliflag.Check(slices.Contains(balancerNames(), name), "--balancer %q: want one of %s", name, strings.Join(balancerNames(), ", "))
}

// newBalancer returns the balancer --balancer names, and whether calls
// race.
func newBalancer(name string) (rpc.Balancer, bool, error) {
	if name == raceName {
		b, err := balance.NewRoundRobin(balance.Config{})
		return b, true, err
	}
	b, err := balance.ByName(name, balance.Config{})
	return b, false, err
}

// clusterOptions are what call and rpcload set on a cluster client.
type clusterOptions struct {
	balancer string
	stagger  time.Duration // race: the wait before each further attempt
	attempts int           // cluster.RetryPolicy.MaxAttempts
	client   rpc.ClientConfig
	// resolve bounds the wait for the first endpoint set.
	resolve time.Duration
	log     io.Writer // endpoint set changes and failed dials; nil: none
}

// etcdCluster is a cluster client of a service in etcd, with its etcd
// client.
type etcdCluster struct {
	*cluster.Client
	svc    etcdService
	etcd   *clientv3.Client
	counts *countingBalancer
	race   bool
	stag   time.Duration
}

// dialEtcd returns a cluster client of svc's endpoints, resolved through
// etcd and balanced as o says. It waits for the first endpoint set, at
// most o.resolve; a service with no endpoint registered is an error.
func dialEtcd(ctx context.Context, svc etcdService, o clusterOptions) (*etcdCluster, error) {
	b, race, err := newBalancer(o.balancer)
	if err != nil {
		return nil, err
	}
	cli, err := svc.client()
	if err != nil {
		return nil, err
	}
	res, err := etcd.NewResolver(cli, svc.service, etcd.ResolverConfig{})
	if err != nil {
		cli.Close()
		return nil, err
	}
	logger := slog.New(slog.DiscardHandler)
	if o.log != nil {
		logger = slog.New(slog.NewTextHandler(o.log, nil))
	}
	counts := newCountingBalancer(b)
	cfg := cluster.Config{
		Client:         o.client,
		Retry:          cluster.RetryPolicy{MaxAttempts: o.attempts},
		ResolveTimeout: o.resolve,
		Logger:         logger,
	}
	cl, err := cluster.Dial(ctx, res, counts, cfg)
	if err != nil {
		cli.Close()
		if errors.Is(err, rpc.ErrNoEndpoints) || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: no endpoint set from etcd within %v (is etcd running there?): %w", svc, o.resolve, err)
		}
		return nil, fmt.Errorf("%s: %w", svc, err)
	}
	if len(cl.Endpoints()) == 0 {
		cl.Close()
		cli.Close()
		return nil, fmt.Errorf("%s: no server registered (no key under %s): %w", svc, svc.prefix(), rpc.ErrNoEndpoints)
	}
	return &etcdCluster{Client: cl, svc: svc, etcd: cli, counts: counts, race: race, stag: o.stagger}, nil
}

// callCtx marks ctx for a race when --balancer is race (the benchmark's
// and call's actions may run twice: they only read).
func (c *etcdCluster) callCtx(ctx context.Context) context.Context {
	if !c.race {
		return ctx
	}
	return cluster.Race(cluster.Idempotent(ctx), c.stag)
}

// Close closes the cluster client, then its etcd client.
func (c *etcdCluster) Close() error {
	err := c.Client.Close()
	return errors.Join(err, c.etcd.Close())
}

// countingBalancer counts, by endpoint, the attempts a balancer's picks
// made that ended within a window (Done reports, canceled ones aside) and
// those that found the endpoint unavailable: rpcload's per-endpoint
// figures. Unlike cluster.Client.Endpoints, it keeps the counts of
// endpoints that left the set and closed (a server shut down or killed
// during the run).
type countingBalancer struct {
	rpc.Balancer
	mu     sync.Mutex                          // serializes Update's copy of counts
	counts atomic.Pointer[map[string]*epCount] // grows only
	// from and until bound the window, in time.Now().UnixNano(); until 0:
	// every attempt counts.
	from, until atomic.Int64
}

type epCount struct{ attempts, unavailable atomic.Uint64 }

func newCountingBalancer(b rpc.Balancer) *countingBalancer {
	c := &countingBalancer{Balancer: b}
	m := map[string]*epCount{}
	c.counts.Store(&m)
	return c
}

// Update adds the endpoints new to the set to the counts, then passes the
// set on.
func (c *countingBalancer) Update(eps []rpc.Endpoint) {
	c.mu.Lock()
	old := *c.counts.Load()
	var next map[string]*epCount
	for _, ep := range eps {
		if _, ok := old[ep.Addr]; ok || ep.Addr == "" {
			continue
		}
		if next == nil {
			next = make(map[string]*epCount, len(old)+len(eps))
			for k, v := range old {
				next[k] = v
			}
		}
		next[ep.Addr] = &epCount{}
	}
	if next != nil {
		c.counts.Store(&next)
	}
	c.mu.Unlock()
	c.Balancer.Update(eps)
}

// window counts from now on only the attempts that end within [from,
// until): those of rpcload's measured window, whose calls are those that
// start in it (the two differ by at most one call per caller at each end).
func (c *countingBalancer) window(from, until time.Time) {
	c.from.Store(from.UnixNano())
	c.until.Store(until.UnixNano())
}

// Done counts the attempt, then passes it on.
func (c *countingBalancer) Done(addr string, res rpc.PickResult) {
	if n := (*c.counts.Load())[addr]; n != nil && !res.Canceled && c.inWindow() {
		n.attempts.Add(1)
		if res.Unavailable {
			n.unavailable.Add(1)
		}
	}
	c.Balancer.Done(addr, res)
}

func (c *countingBalancer) inWindow() bool {
	until := c.until.Load()
	if until == 0 {
		return true
	}
	now := time.Now().UnixNano()
	return now >= c.from.Load() && now < until
}

// endpointCount is one endpoint's line of rpcload's summary.
type endpointCount struct {
	Addr        string  `json:"addr"`
	Attempts    uint64  `json:"attempts"`    // calls sent or tried there, retries included
	Unavailable uint64  `json:"unavailable"` // of those, the ones that found it refused, reset or closed
	Share       float64 `json:"share"`       // per cent of all attempts
}

// snapshot returns the counts so far, sorted by address, with each
// endpoint's share of the attempts.
func (c *countingBalancer) snapshot() []endpointCount {
	var out []endpointCount
	var total uint64
	for addr, n := range *c.counts.Load() {
		e := endpointCount{Addr: addr, Attempts: n.attempts.Load(), Unavailable: n.unavailable.Load()}
		total += e.Attempts
		out = append(out, e)
	}
	slices.SortFunc(out, func(x, y endpointCount) int { return strings.Compare(x.Addr, y.Addr) })
	for i := range out {
		if total > 0 {
			out[i].Share = float64(int64(1000*float64(out[i].Attempts)/float64(total))) / 10
		}
	}
	return out
}

// lockedWriter serializes writes from several goroutines (progress lines,
// log lines) to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
