package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const ttl = 2 * time.Second // the tests' lease TTL

func register(t *testing.T, cli *clientv3.Client, service string, ep rpc.Endpoint, cfg RegisterConfig) *Registration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cfg.TTL == 0 {
		cfg.TTL = ttl
	}
	r, err := Register(ctx, cli, service, ep, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Bounded: with etcd stopped (a test that failed midway) an
		// unbounded Close waits for it until the test binary's timeout.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.Close(ctx)
	})
	return r
}

func newResolver(t *testing.T, cli *clientv3.Client, service string, cfg ResolverConfig) *Resolver {
	t.Helper()
	r, err := NewResolver(cli, service, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Register writes the endpoint's JSON under the documented key; the
// resolver reports it with its metadata; Close deletes the key, revokes
// the lease, and the resolver reports the endpoint gone.
func TestRegisterResolveClose(t *testing.T) {
	checkLeaks(t)
	srv := startEtcd(t)
	cli := newClient(t, srv.endpoint())
	rec := watchResolver(t, newResolver(t, cli, "calc", ResolverConfig{}))
	rec.await(t, 5*time.Second) // no server yet: the first set is empty

	st := newStates()
	epA := rpc.Endpoint{Addr: "127.0.0.1:5001", Weight: 2, Zone: "z1", Version: "1.2.0", Meta: map[string]string{"dc": "north"}}
	a := register(t, cli, "calc", epA, RegisterConfig{OnState: st.on})
	b := register(t, cli, "calc", rpc.Endpoint{Addr: "tcp://127.0.0.1:5002"}, RegisterConfig{})
	rec.await(t, 5*time.Second, "127.0.0.1:5001", "tcp://127.0.0.1:5002")

	eps, _ := rec.latest()
	if !equalEndpoint(eps[0], epA) {
		t.Errorf("resolver reports %+v, registered %+v", eps[0], epA)
	}
	resp, err := cli.Get(ctxT(t), "/lifenet/services/calc/127.0.0.1:5001")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("documented key: %v, %v", resp, err)
	}
	var stored rpc.Endpoint
	if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil || !equalEndpoint(stored, epA) {
		t.Errorf("stored value %s (%v)", resp.Kvs[0].Value, err)
	}
	if got := clientv3.LeaseID(resp.Kvs[0].Lease); got != a.Lease() || got == 0 {
		t.Errorf("key's lease %x, registration's %x", got, a.Lease())
	}
	ttlResp, err := cli.TimeToLive(ctxT(t), a.Lease())
	if err != nil || ttlResp.GrantedTTL != 2 {
		t.Errorf("lease granted TTL %v (%v), want 2", ttlResp.GrantedTTL, err)
	}

	lease := a.Lease()
	if err := a.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	rec.await(t, 5*time.Second, "tcp://127.0.0.1:5002")
	if resp, err := cli.Get(ctxT(t), a.Key()); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("key after Close: %v, %v", resp.Kvs, err)
	}
	if r, err := cli.TimeToLive(ctxT(t), lease); err != nil || r.TTL != -1 {
		t.Errorf("lease after Close: TTL %d (%v), want -1 (revoked)", r.TTL, err)
	}
	if err := a.Close(ctxT(t)); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if got := st.list(); !slices.Equal(got, []State{StateRegistered, StateClosed}) {
		t.Errorf("states %v", got)
	}
	b.Close(ctxT(t))
	rec.await(t, 5*time.Second)
}

// Values under the prefix that are not endpoints are skipped with a log
// line, and keys of other services (even one whose name extends this
// one's) are not listed.
func TestResolverSkipsInvalidValues(t *testing.T) {
	checkLeaks(t)
	srv := startEtcd(t)
	cli := newClient(t, srv.endpoint())
	ctx := ctxT(t)
	for k, v := range map[string]string{
		"/lifenet/services/calc/junk":        "not json",
		"/lifenet/services/calc/noaddr":      `{"weight":3}`,
		"/lifenet/services/calc/good:1":      `{"addr":"good:1"}`,
		"/lifenet/services/calc2/other:1":    `{"addr":"other:1"}`,
		"/lifenet/services/calcx/other:2":    `{"addr":"other:2"}`,
		"/lifenet/services/calc":             `{"addr":"bare"}`,
		"/lifenet/services/other/calc/x:1":   `{"addr":"x:1"}`,
		"/lifenet/servicesXcalc/whatever:10": `{"addr":"whatever:10"}`,
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	var logs logBuffer
	rec := watchResolver(t, newResolver(t, cli, "calc", ResolverConfig{Logger: logs.logger()}))
	rec.await(t, 5*time.Second, "good:1")
	if !logs.contains("junk") || !logs.contains("noaddr") {
		t.Errorf("no log line for the skipped values:\n%s", logs.String())
	}
	// A valid value turned invalid takes its endpoint out; an invalid one
	// made valid brings it in.
	cli.Put(ctx, "/lifenet/services/calc/good:1", "{")
	rec.await(t, 5*time.Second)
	cli.Put(ctx, "/lifenet/services/calc/junk", `{"addr":"junk:1"}`)
	rec.await(t, 5*time.Second, "junk:1")
	for _, set := range rec.all() {
		for _, ep := range set {
			if ep.Addr != "good:1" && ep.Addr != "junk:1" {
				t.Errorf("reported %q", ep.Addr)
			}
		}
	}
}

// A burst of registrations is reported as a few updates, not one each.
func TestResolverDebounces(t *testing.T) {
	checkLeaks(t)
	srv := startEtcd(t)
	cli := newClient(t, srv.endpoint())
	rec := watchResolver(t, newResolver(t, cli, "calc", ResolverConfig{Debounce: 200 * time.Millisecond}))
	rec.await(t, 5*time.Second)
	const n = 20
	var want []string
	for i := range n {
		addr := fmt.Sprintf("127.0.0.1:%d", 7000+i)
		want = append(want, addr)
		if _, err := cli.Put(ctxT(t), Key("", "calc", addr), fmt.Sprintf(`{"addr":%q}`, addr)); err != nil {
			t.Fatal(err)
		}
	}
	rec.await(t, 5*time.Second, want...)
	if got := len(rec.all()) - 1; got > n/4 {
		t.Errorf("%d puts gave %d updates, want at most %d", n, got, n/4)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []RegisterConfig{
		{TTL: -1}, {TTL: 500 * time.Millisecond}, {Timeout: -1}, {Prefix: "/x"},
		{RetryMin: -1}, {RetryMax: -1}, {RetryMin: 2 * time.Second, RetryMax: time.Second},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: Validate() = %v", c, err)
		}
		if _, err := Register(context.Background(), nil, "calc", rpc.Endpoint{Addr: "a:1"}, c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: Register: %v", c, err)
		}
	}
	for _, c := range []ResolverConfig{{Prefix: "x"}, {Timeout: -1}, {RetryMin: -1}, {RetryMin: time.Second, RetryMax: time.Millisecond}} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: Validate() = %v", c, err)
		}
		if _, err := NewResolver(nil, "calc", c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: NewResolver: %v", c, err)
		}
	}
	for _, s := range []string{"", "a/b"} {
		if _, err := NewResolver(nil, s, ResolverConfig{}); !errors.Is(err, ErrConfig) {
			t.Errorf("service %q: NewResolver: %v", s, err)
		}
		if _, err := Register(context.Background(), nil, s, rpc.Endpoint{Addr: "a:1"}, RegisterConfig{}); !errors.Is(err, ErrConfig) {
			t.Errorf("service %q: Register: %v", s, err)
		}
	}
	if _, err := Register(context.Background(), nil, "calc", rpc.Endpoint{Addr: "a:1"}, RegisterConfig{}); !errors.Is(err, ErrConfig) {
		t.Errorf("nil client: Register: %v", err)
	}
	if _, err := NewResolver(nil, "calc", ResolverConfig{}); !errors.Is(err, ErrConfig) {
		t.Errorf("nil client: NewResolver: %v", err)
	}
	if _, err := Register(context.Background(), &clientv3.Client{}, "calc", rpc.Endpoint{}, RegisterConfig{}); !errors.Is(err, ErrConfig) {
		t.Errorf("no Addr: Register: %v", err)
	}
	d := DefaultRegisterConfig()
	if d.TTL != DefaultTTL || d.Timeout != 5*time.Second || d.RetryMax != 5*time.Second || d.Prefix != DefaultPrefix || d.Validate() != nil {
		t.Errorf("DefaultRegisterConfig() = %+v", d)
	}
	if c := (RegisterConfig{TTL: 1500 * time.Millisecond}); true {
		c.fill()
		if c.TTL != 2*time.Second {
			t.Errorf("TTL 1.5 s filled as %v, want 2 s (etcd counts whole seconds)", c.TTL)
		}
	}
	if r := DefaultResolverConfig(); r.Debounce != DefaultDebounce || r.Timeout != DefaultResolverTimeout || r.Validate() != nil {
		t.Errorf("DefaultResolverConfig() = %+v", r)
	}
}

// Register gives up at once on the errors no retry mends.
func TestPermanentErrors(t *testing.T) {
	for err, want := range map[error]bool{
		rpctypes.ErrPermissionDenied:                         true,
		rpctypes.ErrInvalidAuthToken:                         true,
		fmt.Errorf("x: %w", rpctypes.ErrPermissionDenied):    true,
		status.Error(codes.Unauthenticated, "no"):            true,
		rpctypes.ErrLeaseNotFound:                            false,
		rpctypes.ErrNoLeader:                                 false,
		status.Error(codes.Unavailable, "down"):              false,
		context.DeadlineExceeded:                             false,
		errors.New("grpc: the client connection is closing"): false,
	} {
		if got := permanent(err); got != want {
			t.Errorf("permanent(%v) = %v", err, got)
		}
	}
}

// The resolver ends on a list refused for good, never on a watch's error:
// a stale token's refusal of a new watcher is mended by listing again.
func TestResolverGivesUpOnARefusedListOnly(t *testing.T) {
	for _, err := range []error{rpctypes.ErrPermissionDenied, rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthOldRevision, status.Error(codes.Unauthenticated, "no")} {
		if !givesUp(err, false) || givesUp(err, true) {
			t.Errorf("%v: gives up after a list %v, after a watch %v; want true, false", err, givesUp(err, false), givesUp(err, true))
		}
	}
	if givesUp(rpctypes.ErrNoLeader, false) {
		t.Error("gives up on a list without a leader")
	}
}

// Register keeps trying while etcd cannot be reached and returns the
// error once its ctx ends; the resolver's Watch returns an error once its
// client is closed.
func TestUnreachableAtStartAndClientClosed(t *testing.T) {
	checkLeaks(t)
	cli := newClient(t, freeAddr(t)) // nothing listens there
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := Register(ctx, cli, "calc", rpc.Endpoint{Addr: "a:1"}, RegisterConfig{TTL: ttl})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Register with etcd unreachable: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Register returned %v after its ctx's 1 s deadline", d)
	}

	srv := startEtcd(t)
	cli2, err := clientv3.New(clientConfig(srv.endpoint()))
	if err != nil {
		t.Fatal(err)
	}
	res := newResolver(t, cli2, "calc", ResolverConfig{})
	errc := make(chan error, 1)
	go func() { errc <- res.Watch(context.Background(), func([]rpc.Endpoint) {}) }()
	time.Sleep(200 * time.Millisecond)
	cli2.Close()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "client closed") {
			t.Errorf("Watch after the client closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch still running 10 s after its client closed")
	}
}

// The lease is revoked behind the registration's back (as when etcd loses
// it): the registration writes its key again under a new lease, and the
// resolver, having seen it go, sees it come back.
func TestReregisterAfterLeaseLost(t *testing.T) {
	checkLeaks(t)
	srv := startEtcd(t)
	cli := newClient(t, srv.endpoint())
	rec := watchResolver(t, newResolver(t, cli, "calc", ResolverConfig{Debounce: -1}))
	st := newStates()
	r := register(t, cli, "calc", rpc.Endpoint{Addr: "127.0.0.1:5001"}, RegisterConfig{OnState: st.on})
	st.await(t, time.Second, StateRegistered)
	rec.await(t, 5*time.Second, "127.0.0.1:5001")

	old := r.Lease()
	revoked := time.Now()
	if _, err := newClient(t, srv.endpoint()).Revoke(ctxT(t), old); err != nil {
		t.Fatal(err)
	}
	st.await(t, 5*time.Second, StateLost)
	back := st.await(t, ttl, StateRegistered)
	t.Logf("registered again %v after the revoke", back.Sub(revoked).Round(time.Millisecond))
	if r.Lease() == old || r.Lease() == 0 {
		t.Errorf("lease %x after renewal (old %x)", r.Lease(), old)
	}
	rec.await(t, 5*time.Second, "127.0.0.1:5001")
	sawGone := false
	for _, set := range rec.all() {
		sawGone = sawGone || len(set) == 0
	}
	if !sawGone {
		t.Error("the resolver never saw the revoked key go")
	}
}

// etcd stops for longer than the TTL (the registration's keep-alive gives
// up: StateLost), then starts again on the same data dir and ports: the
// registration is back within the TTL, the resolver never reported an
// empty set, and it sees a server registered after the restart.
func TestEtcdRestart(t *testing.T) {
	checkLeaks(t)
	srv := startEtcd(t)
	cli := newClient(t, srv.endpoint())
	rec := watchResolver(t, newResolver(t, cli, "calc", ResolverConfig{}))
	st := newStates()
	r := register(t, cli, "calc", rpc.Endpoint{Addr: "127.0.0.1:5001"}, RegisterConfig{OnState: st.on})
	st.await(t, time.Second, StateRegistered)
	rec.await(t, 5*time.Second, "127.0.0.1:5001")

	srv.stop()
	st.await(t, ttl+3*time.Second, StateLost)
	srv.start()
	restarted := time.Now()
	back := st.await(t, ttl, StateRegistered)
	t.Logf("registered again %v after the restart", back.Sub(restarted).Round(time.Millisecond))
	resp, err := cli.Get(ctxT(t), r.Key())
	if err != nil || len(resp.Kvs) != 1 || clientv3.LeaseID(resp.Kvs[0].Lease) != r.Lease() {
		t.Fatalf("key after the restart: %v, %v (lease %x)", resp, err, r.Lease())
	}

	register(t, cli, "calc", rpc.Endpoint{Addr: "127.0.0.1:5002"}, RegisterConfig{})
	rec.await(t, 5*time.Second, "127.0.0.1:5001", "127.0.0.1:5002")
	for i, set := range rec.all()[1:] {
		if !slices.Contains(addrsOf(set), "127.0.0.1:5001") {
			t.Errorf("update %d lost the registered server: %v", i+1, addrsOf(set))
		}
	}
}

// etcd is unreachable for 10 s: the resolver keeps its last set and never
// reports an empty one; once etcd is back the registrations are renewed
// and the resolver goes on watching.
func TestEtcdUnreachable(t *testing.T) {
	checkLeaks(t)
	srv := startEtcd(t)
	cli := newClient(t, srv.endpoint())
	var logs logBuffer
	rec := watchResolver(t, newResolver(t, cli, "calc", ResolverConfig{Logger: logs.logger()}))
	cfg := RegisterConfig{TTL: 3 * time.Second}
	register(t, cli, "calc", rpc.Endpoint{Addr: "127.0.0.1:5001"}, cfg)
	st := newStates()
	cfg.OnState = st.on
	register(t, cli, "calc", rpc.Endpoint{Addr: "127.0.0.1:5002"}, cfg)
	rec.await(t, 5*time.Second, "127.0.0.1:5001", "127.0.0.1:5002")
	full := len(rec.all())

	srv.stop()
	time.Sleep(10 * time.Second)
	srv.start()
	st.await(t, 10*time.Second, StateRegistered) // after the StateLost of the outage
	register(t, cli, "calc", rpc.Endpoint{Addr: "127.0.0.1:5003"}, RegisterConfig{})
	rec.await(t, 10*time.Second, "127.0.0.1:5001", "127.0.0.1:5002", "127.0.0.1:5003")
	for i, set := range rec.all()[full:] {
		if a := addrsOf(set); !slices.Contains(a, "127.0.0.1:5001") || !slices.Contains(a, "127.0.0.1:5002") {
			t.Errorf("update %d during or after the outage: %v", full+i, a)
		}
	}
	if got := st.list(); !slices.Contains(got, StateLost) {
		t.Errorf("a 10 s outage with a 3 s TTL gave states %v, want a StateLost", got)
	}
}

// The resolver's client is cut off from etcd (its proxy blocked) while
// servers come and go and etcd compacts its history up to the current
// revision: when the client is back its watch cannot resume (ErrCompacted),
// so the resolver lists again and converges on the new set.
func TestCompactionDuringWatch(t *testing.T) {
	checkLeaks(t)
	srv := startEtcd(t)
	direct := newClient(t, srv.direct())
	behind := newClient(t, srv.endpoint())
	var logs logBuffer
	rec := watchResolver(t, newResolver(t, behind, "calc", ResolverConfig{Logger: logs.logger()}))
	cfg := RegisterConfig{TTL: 5 * time.Second}
	a := register(t, direct, "calc", rpc.Endpoint{Addr: "127.0.0.1:5001"}, cfg)
	register(t, direct, "calc", rpc.Endpoint{Addr: "127.0.0.1:5002"}, cfg)
	rec.await(t, 5*time.Second, "127.0.0.1:5001", "127.0.0.1:5002")

	srv.front.block()
	ctx := ctxT(t)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	register(t, direct, "calc", rpc.Endpoint{Addr: "127.0.0.1:5003"}, cfg)
	register(t, direct, "calc", rpc.Endpoint{Addr: "127.0.0.1:5004"}, cfg)
	for i := range 10 {
		if _, err := direct.Put(ctx, "/lifenet/services/other/x", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := direct.Get(ctx, "/lifenet/services/other/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the resolver is cut off meanwhile: nothing changes
	if got, _ := rec.latest(); !slices.Equal(addrsOf(got), []string{"127.0.0.1:5001", "127.0.0.1:5002"}) {
		t.Errorf("while cut off the resolver reports %v", addrsOf(got))
	}
	srv.front.unblock()
	rec.await(t, 10*time.Second, "127.0.0.1:5002", "127.0.0.1:5003", "127.0.0.1:5004")
	if !logs.contains("compacted") {
		t.Errorf("the resolver converged without seeing the compaction:\n%s", logs.String())
	}
}
