package rpctool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/cluster"
	"github.com/lifenet/lifenet/transport"
)

// etcdResolveTimeout bounds call's and rpcload's wait for the first
// endpoint set from etcd.
const etcdResolveTimeout = 10 * time.Second

// loadSummary is rpcload's summary: rpcbench's, and through etcd the
// balancer and each endpoint's attempts during the window.
type loadSummary struct {
	rpcbench.Summary
	Balancer  string          `json:"balancer,omitempty"`
	Endpoints []endpointCount `json:"endpoints,omitempty"`
}

// checkEtcdLoad checks rpcload's flags for a run through etcd, and that
// the cluster flags are not given without one.
func checkEtcdLoad(c loadConfig, viaEtcd bool, set map[string]bool) error {
	if !viaEtcd {
		return cliflag.Check(!set["balancer"] && !set["attempts"] && !set["stagger"],
			"--balancer, --attempts and --stagger need --remote %s", etcdSynopsis)
	}
	_, err := parseEtcd(c.remote)
	if err != nil {
		return fmt.Errorf("--remote %w", err)
	}
	return cliflag.First(
		cliflag.Check(c.impl == "lifenet", "--remote %s: lifenet servers only (a net/rpc server does not register)", etcdSynopsis),
		cliflag.Check(!c.direct, "--direct calls this process's server: no --remote"),
		checkBalancer(c.balancer),
		cliflag.Between("attempts", c.attempts, 1, cluster.MaxAttempts),
		cliflag.Between("stagger", c.stagger, time.Millisecond, time.Minute),
	)
}

// etcdTarget is rpcload's target through etcd: conns × inflight callers
// sharing one cluster client, whose endpoints each keep --conns
// connections; counts counts each endpoint's attempts.
func etcdTarget(ctx context.Context, c loadConfig, log io.Writer) (t *rpcbench.Target, counts *countingBalancer, err error) {
	svc, err := parseEtcd(c.remote)
	if err != nil {
		return nil, nil, err
	}
	ccfg := rpc.ClientConfig{Conns: c.conns, Timeout: c.timeout}
	if c.recvMode == "sync" {
		ccfg.Transport.Mode = transport.ReceiveSync
	}
	cl, err := dialEtcd(ctx, svc, clusterOptions{balancer: c.balancer, stagger: c.stagger, attempts: c.attempts,
		client: ccfg, resolve: etcdResolveTimeout, log: log})
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(log, "[rpcload] %s: %d endpoints, --balancer %s\n", svc, len(cl.Endpoints()), c.balancer)
	sh := rpcbench.ShapeOf(c.call)
	t = &rpcbench.Target{
		Close: func() { cl.Close() },
		Stats: func(context.Context) (rpcbench.ProcStats, bool) { return rpcbench.ProcStats{}, false }, // many servers: not measured
	}
	for i := range c.conns * c.inflight {
		key := ""
		if c.balancer == "hash" { // each caller its key, so that the ring spreads them
			key = fmt.Sprintf("rpcload-%d", i)
		}
		t.Callers = append(t.Callers, clusterCaller(cl, sh, key))
	}
	return t, cl.counts, nil
}

// clusterCaller is rpcbench.LifenetCaller for a cluster client: a Caller
// of sh's action, with key as its balancing key ("" for none), raced when
// --balancer is race. The call's ctx is derived once for each ctx the
// caller is given (Measure gives one), so that a call allocates no ctx.
func clusterCaller(cl *etcdCluster, sh rpcbench.Shape, key string) rpcbench.Caller {
	args := sh.Args()
	var base, derived context.Context
	ctxOf := func(ctx context.Context) context.Context {
		if ctx != base {
			base, derived = ctx, cl.callCtx(ctx)
			if key != "" {
				derived = rpc.WithBalanceKey(derived, key)
			}
		}
		return derived
	}
	switch {
	case sh.Bytes != nil:
		var out []byte
		return func(ctx context.Context) error {
			if err := cl.Invoke(ctxOf(ctx), sh.Action, args, &out); err != nil {
				return err
			}
			return rpcbench.CheckBytes(out, sh.Bytes)
		}
	case sh.Str != "":
		var out string
		return func(ctx context.Context) error {
			if err := cl.Invoke(ctxOf(ctx), sh.Action, args, &out); err != nil {
				return err
			}
			return rpcbench.CheckString(out, sh.Str)
		}
	}
	var r int32
	return func(ctx context.Context) error {
		if err := cl.Invoke(ctxOf(ctx), sh.Action, args, &r); err != nil {
			return err
		}
		return rpcbench.CheckInt(r)
	}
}

// writeLoadSummary prints rpcbench's summary block and SUMMARY line, with,
// through etcd, the balancer and a line per endpoint added to both.
func writeLoadSummary(out io.Writer, s loadSummary, human bool) {
	if s.Endpoints == nil {
		rpcbench.WriteSummary(out, "rpcload", s.Summary, human)
		return
	}
	if human {
		var b bytes.Buffer
		rpcbench.WriteSummary(&b, "rpcload", s.Summary, true)
		block := b.String()
		if i := strings.LastIndex(block, "SUMMARY: "); i >= 0 {
			block = block[:i] // rpcbench's line, replaced by this summary's below
		}
		io.WriteString(out, block)
		fmt.Fprintf(out, "balancer    : %s over %d endpoints (attempts in the window, retries included)\n", s.Balancer, len(s.Endpoints))
		for _, e := range s.Endpoints {
			fmt.Fprintf(out, "endpoint    : %-21s %d attempts (%.1f %%), %d unavailable\n", e.Addr, e.Attempts, e.Share, e.Unavailable)
		}
	}
	js, _ := json.Marshal(s)
	fmt.Fprintf(out, "SUMMARY: %s\n", js)
}
