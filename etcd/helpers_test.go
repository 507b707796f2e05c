package etcd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

// checkLeaks fails t if goroutines started during the test outlive it.
// Call it first, so that its cleanup runs last.
func checkLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// etcdServer is a one-member etcd embedded in the test, on loopback ports
// picked at random, with a data dir that outlives stop so that start
// brings the same member back on the same ports. Clients reach it through
// a proxy (endpoint) that stop cuts first, so that stop is abrupt, as a
// crash of etcd is, and quick: etcd's own Close waits up to 5 s for open
// streams.
type etcdServer struct {
	t                  *testing.T
	dir                string
	clientURL, peerURL url.URL
	front              *proxy
	e                  *embed.Etcd
}

func startEtcd(t *testing.T) *etcdServer {
	t.Helper()
	s := &etcdServer{
		t:         t,
		dir:       t.TempDir(),
		clientURL: url.URL{Scheme: "http", Host: freeAddr(t)},
		peerURL:   url.URL{Scheme: "http", Host: freeAddr(t)},
	}
	s.front = startProxy(t, s.clientURL.Host)
	s.start()
	t.Cleanup(s.stop)
	return s
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (s *etcdServer) start() {
	s.t.Helper()
	start := time.Now()
	cfg := embed.NewConfig()
	cfg.Name = "lifenet-test"
	cfg.Dir = s.dir
	cfg.ListenClientUrls = []url.URL{s.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{s.clientURL}
	cfg.ListenPeerUrls = []url.URL{s.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{s.peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		s.t.Fatalf("embedded etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		e.Close()
		s.t.Fatal("embedded etcd not ready after 20 s")
	}
	s.e = e
	s.front.unblock()
	s.t.Logf("etcd started in %v", time.Since(start).Round(time.Millisecond))
}

func (s *etcdServer) stop() {
	if s.e != nil {
		start := time.Now()
		s.front.block()
		s.e.Close()
		s.t.Logf("etcd stopped in %v", time.Since(start).Round(time.Millisecond))
		s.e = nil
	}
}

// endpoint is the address clients dial: the proxy in front of etcd.
func (s *etcdServer) endpoint() string { return s.front.addr() }

// direct is etcd's own client address, which stop does not cut
// before etcd closes.
func (s *etcdServer) direct() string { return s.clientURL.Host }

// newClient returns a client of endpoint, closed at the end of the test.
func newClient(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientConfig(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func clientConfig(endpoint string) clientv3.Config {
	c := ClientConfig(endpoint)
	c.Logger = zap.NewNop()
	return c
}

// recorder runs a resolver's Watch and keeps every set it reports.
type recorder struct {
	mu      sync.Mutex
	sets    [][]rpc.Endpoint
	changed chan struct{}
	done    chan error
	cancel  context.CancelFunc
}

func watchResolver(t *testing.T, r *Resolver) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{changed: make(chan struct{}, 1), done: make(chan error, 1), cancel: cancel}
	go func() {
		rec.done <- r.Watch(ctx, func(eps []rpc.Endpoint) {
			rec.mu.Lock()
			rec.sets = append(rec.sets, eps)
			rec.mu.Unlock()
			select {
			case rec.changed <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() { rec.stop(t) })
	return rec
}

// stop ends the Watch and checks that it returned ctx's error.
func (rec *recorder) stop(t *testing.T) {
	t.Helper()
	if rec.cancel == nil {
		return
	}
	rec.cancel()
	rec.cancel = nil
	select {
	case err := <-rec.done:
		if err != context.Canceled {
			t.Errorf("Watch returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("Watch did not return 10 s after its ctx ended")
	}
}

func (rec *recorder) all() [][]rpc.Endpoint {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.sets)
}

func (rec *recorder) latest() ([]rpc.Endpoint, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.sets) == 0 {
		return nil, false
	}
	return rec.sets[len(rec.sets)-1], true
}

// await waits until the latest set reported has exactly addrs, and
// returns when it saw that.
func (rec *recorder) await(t *testing.T, timeout time.Duration, addrs ...string) time.Time {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if eps, ok := rec.latest(); ok && slices.Equal(addrsOf(eps), addrs) {
			return time.Now()
		}
		select {
		case <-rec.changed:
		case <-deadline:
			eps, _ := rec.latest()
			t.Fatalf("after %v the resolver reports %v, want %v", timeout, addrsOf(eps), addrs)
		}
	}
}

func addrsOf(eps []rpc.Endpoint) []string {
	out := make([]string, len(eps))
	for i, ep := range eps {
		out[i] = ep.Addr
	}
	return out
}

// states records a registration's OnState calls.
type states struct {
	mu  sync.Mutex
	got []State
	ch  chan State
}

func newStates() *states { return &states{ch: make(chan State, 100)} }

func (s *states) on(st State, _ error) {
	s.mu.Lock()
	s.got = append(s.got, st)
	s.mu.Unlock()
	s.ch <- st
}

// await waits for state st, and returns when it came.
func (s *states) await(t *testing.T, timeout time.Duration, st State) time.Time {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case got := <-s.ch:
			if got == st {
				return time.Now()
			}
		case <-deadline:
			t.Fatalf("no state %v within %v (states so far %v)", st, timeout, s.list())
		}
	}
}

func (s *states) list() []State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// logBuffer is a slog.Logger whose lines the test can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (b *logBuffer) contains(s string) bool { return strings.Contains(b.String(), s) }

// proxy forwards TCP connections to target until blocked: block cuts
// every connection and refuses new ones until unblock, so that a client
// behind it finds etcd unreachable while etcd itself runs on.
type proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	blocked bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.blocked {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *proxy) block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *proxy) unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = false
}

func (p *proxy) close() {
	p.ln.Close()
	p.block()
	p.wg.Wait()
}

// The child process of TestLeaseExpiresAfterSIGKILL: the test binary run
// again with childEnv set to "endpoint service addr ttl-seconds". It registers,
// prints "registered", and waits to be killed.
const childEnv = "LIFENET_ETCD_TEST_CHILD"

func childMain() int {
	var endpoint, service, addr string
	var ttlSeconds int
	if _, err := fmt.Sscan(os.Getenv(childEnv), &endpoint, &service, &addr, &ttlSeconds); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	cli, err := clientv3.New(clientConfig(endpoint))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Register(ctx, cli, service, rpc.Endpoint{Addr: addr}, RegisterConfig{TTL: time.Duration(ttlSeconds) * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	fmt.Println("registered")
	time.Sleep(time.Minute) // the parent kills it long before; this bounds an orphan
	return 3
}
