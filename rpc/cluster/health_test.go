package cluster_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// healthOf returns addr's health as c sees it.
func healthOf(c *cluster.Client, addr string) cluster.Health {
	for _, e := range c.Endpoints() {
		if e.Addr == addr {
			return e.Health
		}
	}
	return -1
}

func inFlightOf(c *cluster.Client, addr string) int {
	for _, e := range c.Endpoints() {
		if e.Addr == addr {
			return e.InFlight
		}
	}
	return 0
}

// whoLoad runs Test/Who calls from workers goroutines until stop, keeping
// each call's answer or error.
type whoLoad struct {
	stop  atomic.Bool
	wg    sync.WaitGroup
	mu    sync.Mutex
	by    map[string]int // answers by server name
	errs  []timedErr
	total atomic.Int64
}

type timedErr struct {
	err  error
	took time.Duration
}

func startWhoLoad(c *cluster.Client, workers int, action string, args any) *whoLoad {
	l := &whoLoad{by: map[string]int{}}
	for range workers {
		l.wg.Go(func() {
			for !l.stop.Load() {
				start := time.Now()
				who, err := cluster.Call[string](context.Background(), c, action, args)
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, timedErr{err, time.Since(start)})
				} else {
					l.by[who]++
				}
				l.mu.Unlock()
				l.total.Add(1)
			}
		})
	}
	return l
}

func (l *whoLoad) end() {
	l.stop.Store(true)
	l.wg.Wait()
}

func (l *whoLoad) answers(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[name]
}

func (l *whoLoad) failures() []timedErr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]timedErr(nil), l.errs...)
}

// more waits until n more calls of l have ended.
func (l *whoLoad) more(t *testing.T, n int64) {
	t.Helper()
	want := l.total.Load() + n
	until(t, "more calls", func() bool { return l.total.Load() >= want })
}

// A partition: the link to B goes down under load with the connections
// open (a proxy stops passing bytes), and those open at the cut stay
// silent after the link is back, as TCP connections in a long
// retransmission backoff are. The calls on B end at their deadline, each
// with rpc.ErrTimeout; after two in a row B is shielded (HealthNoReply):
// the calls go to A and C and none fails; once the link is back, a probe
// on a new connection finds B within a probe period or so, and B answers
// calls again on that connection.
func TestPartitionShieldsThenProbesBack(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	p := startProxy(t, ss[1].addr)
	eps := []rpc.Endpoint{{Addr: ss[0].addr}, {Addr: p.addr()}, {Addr: ss[2].addr}}
	const timeout = 300 * time.Millisecond
	const interval = 100 * time.Millisecond
	c := dial(t, rpc.StaticResolver(eps), roundRobin(t), cluster.Config{
		Client:        rpc.ClientConfig{Timeout: timeout},
		ProbeInterval: interval,
	})
	must(t, load(c, 30, 1))
	if ss[1].who.Load() == 0 {
		t.Fatal("B took none of the first calls")
	}

	l := startWhoLoad(c, 4, "Test/Who", nil)
	defer l.end()
	l.more(t, 20)
	p.cut()
	cut := time.Now()
	until(t, "B shielded", func() bool { return healthOf(c, p.addr()) == cluster.HealthNoReply })
	shielded := time.Since(cut)
	until(t, "the calls stuck on B to end", func() bool { return inFlightOf(c, p.addr()) == 0 })
	failed := len(l.failures())
	l.more(t, 300)
	if n := len(l.failures()); n != failed {
		t.Errorf("%d calls failed after B was shielded and its calls had ended: %v", n-failed, l.failures()[failed:])
	}
	for _, f := range l.failures() {
		if !errors.Is(f.err, rpc.ErrTimeout) || f.took < timeout-50*time.Millisecond {
			t.Errorf("a call on the cut-off B: %v after %v, want rpc.ErrTimeout at its %v deadline", f.err, f.took, timeout)
		}
	}
	if failed < 2 {
		t.Errorf("%d calls timed out on B before it was shielded, want at least the 2 that shield it", failed)
	}

	p.heal()
	healed := time.Now()
	until(t, "B back", func() bool { return healthOf(c, p.addr()) == cluster.HealthOK })
	back := time.Since(healed)
	before := l.answers("B")
	until(t, "B to answer calls again", func() bool { return l.answers("B") > before })
	l.end()
	t.Logf("B shielded %v after the cut (%d calls timed out on it, call timeout %v), back %v after the link (probe interval %v)",
		shielded.Round(time.Millisecond), failed, timeout, back.Round(time.Millisecond), interval)
	if n := len(l.failures()); n != failed {
		t.Errorf("%d calls failed after B came back: %v", n-failed, l.failures()[failed:])
	}
	if back > 20*interval {
		t.Errorf("B back %v after the link, want about a probe interval (%v)", back, interval)
	}
	if p.stuckBytes() == 0 {
		t.Error("no byte was held on the connections cut for good: the test did not cut a live connection")
	}
}

// silentServer accepts connections and never answers (a hung process, a
// partition past the accept): calls on it end at their deadline. accepts
// counts its connections.
func silentServer(t *testing.T) (addr string, accepts *atomic.Int64) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	accepts = new(atomic.Int64)
	wg.Go(func() {
		for {
			cn, err := l.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			wg.Go(func() { io.Copy(io.Discard, cn); cn.Close() })
		}
	})
	return l.Addr().String(), accepts
}

// Each probe of an endpoint shielded for no reply dials afresh, also
// after a probe whose dial worked but whose Api/Health got no reply: a
// connection that never answered is not kept for the next probes. The
// endpoint goes silent after it connected (a proxy cut): new connections
// through it are accepted and never answered.
func TestProbesOfASilentEndpointDialAfresh(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t, "A", nil)
	p := startProxy(t, s.addr)
	c := dial(t, rpc.StaticResolver{{Addr: p.addr()}}, roundRobin(t), cluster.Config{
		Client:        rpc.ClientConfig{Timeout: 100 * time.Millisecond},
		ProbeInterval: 50 * time.Millisecond, ProbeTimeout: 25 * time.Millisecond,
	})
	_, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
	must(t, err)
	p.cut()
	until(t, "shielded for no reply", func() bool {
		cluster.Call[string](context.Background(), c, "Test/Who", nil)
		return healthOf(c, p.addr()) == cluster.HealthNoReply
	})
	shielded := p.accepts.Load()
	until(t, "three probes on new connections", func() bool { return p.accepts.Load() >= shielded+3 })
}

// A listener that takes connections and never answers is never
// connected: the dial's Api/Health gets no reply within ConnectTimeout,
// the connection is closed, and a call that had no other endpoint fails
// without having been written, at ConnectTimeout rather than its own
// Timeout; the next dial, a second later at the soonest, is on a new
// connection.
func TestSilentListenerIsNeverConnected(t *testing.T) {
	leakcheck.Check(t)
	addr, accepts := silentServer(t)
	c := dial(t, rpc.StaticResolver{{Addr: addr}}, roundRobin(t), cluster.Config{
		Client:         rpc.ClientConfig{Timeout: 5 * time.Second},
		ConnectTimeout: 100 * time.Millisecond,
	})
	for i := range 2 {
		start := time.Now()
		_, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
		took := time.Since(start)
		if !errors.Is(err, rpc.ErrNotSent) || !errors.Is(err, rpc.ErrNoServer) {
			t.Errorf("call %d to a silent listener: %v; want rpc.ErrNotSent and rpc.ErrNoServer", i, err)
		}
		if took > 3*time.Second {
			t.Errorf("call %d to a silent listener took %v: past ConnectTimeout (100 ms), near its own Timeout", i, took)
		}
		if i == 0 {
			time.Sleep(1100 * time.Millisecond) // past the redial wait
		}
	}
	until(t, "the second dial's end", func() bool { return c.Endpoints()[0].DialFailures == 2 })
	if n := accepts.Load(); n != 2 {
		t.Errorf("%d connections accepted, want 2 (one per dial)", n)
	}
	if e := c.Endpoints()[0]; e.Connected || !e.Unreachable {
		t.Errorf("the silent endpoint: %+v; want not connected, unreachable", e)
	}
}

// However many endpoints are shielded, none is taken while another is
// healthy: under Failover, four endpoints at the head of the list that
// stop answering (their calls time out; their Api/Health still answers)
// leave the calls to the fifth once they are shielded.
func TestShieldedEndpointsAllAvoided(t *testing.T) {
	leakcheck.Check(t)
	var eps []rpc.Endpoint
	for i := range 4 {
		s := startServer(t, string(rune('A'+i)), nil)
		s.delay.Store(int64(time.Hour))
		eps = append(eps, rpc.Endpoint{Addr: s.addr})
	}
	e := startServer(t, "E", nil)
	eps = append(eps, rpc.Endpoint{Addr: e.addr})
	fo, err := balance.NewFailover(balance.Config{})
	must(t, err)
	c := dial(t, rpc.StaticResolver(eps), fo, cluster.Config{Client: rpc.ClientConfig{Timeout: 100 * time.Millisecond}, ProbeInterval: time.Hour})
	until(t, "the four silent endpoints shielded", func() bool {
		cluster.Call[string](context.Background(), c, "Test/Slow", nil)
		for _, ep := range eps[:4] {
			if healthOf(c, ep.Addr) != cluster.HealthNoReply {
				return false
			}
		}
		return true
	})
	before := e.calls.Load()
	for i := range 10 {
		if who, err := cluster.Call[string](context.Background(), c, "Test/Slow", nil); err != nil || who != "E" {
			t.Fatalf("call %d with A to D shielded: %q, %v; want E's answer", i, who, err)
		}
	}
	if n := e.calls.Load() - before; n != 10 {
		t.Errorf("E answered %d of 10 calls", n)
	}
}

// A timeout followed by a reply from the same endpoint is the call's
// slowness, not the endpoint's: timeouts with replies between never
// shield. Two in a row with no reply do (the probes are off here, an
// hour apart); a call sent to the shielded endpoint as the last resort
// (it is the only one) gets a reply on a new connection and brings it
// back.
func TestTimeoutsShieldOnlyInARow(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t, "A", nil)
	s.delay.Store(int64(time.Second))
	c := dial(t, rpc.StaticResolver{{Addr: s.addr}}, roundRobin(t), cluster.Config{
		Client:        rpc.ClientConfig{Timeout: 50 * time.Millisecond},
		ProbeInterval: time.Hour,
	})
	ctx := context.Background()
	slow := func() {
		t.Helper()
		if _, err := cluster.Call[string](ctx, c, "Test/Slow", nil); !errors.Is(err, rpc.ErrTimeout) {
			t.Fatalf("Test/Slow: %v, want rpc.ErrTimeout", err)
		}
	}
	who := func() {
		t.Helper()
		if _, err := cluster.Call[string](ctx, c, "Test/Who", nil); err != nil {
			t.Fatalf("Test/Who: %v", err)
		}
	}
	for range 4 {
		slow()
		who()
		if h := healthOf(c, s.addr); h != cluster.HealthOK {
			t.Fatalf("timeouts with replies between: health %v, want ok", h)
		}
	}
	slow()
	if h := healthOf(c, s.addr); h != cluster.HealthOK {
		t.Fatalf("one timeout: health %v, want ok", h)
	}
	slow()
	if h := healthOf(c, s.addr); h != cluster.HealthNoReply {
		t.Fatalf("two timeouts in a row: health %v, want no reply", h)
	}
	if e := c.Endpoints()[0]; e.Connected {
		t.Error("shielded for no reply, the endpoint's client was kept: want it set aside for a new connection")
	}
	who()
	if e := c.Endpoints()[0]; e.Health != cluster.HealthOK || !e.Connected {
		t.Errorf("after a reply: health %v, connected %v; want ok on a new connection", e.Health, e.Connected)
	}
}

// Draining: a server set not serving (rpc.Server.SetServing(false)) under
// load is seen by the next probe (Api/Health answers 503) and takes no new
// call from then on; the calls running on it finish; set serving again,
// it is back within a probe or so. No call fails.
func TestDrainingUnderLoad(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	const interval = 100 * time.Millisecond
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), roundRobin(t), cluster.Config{ProbeInterval: interval})
	l := startWhoLoad(c, 6, "Test/Work", WorkArgs{Sleep: 20 * time.Millisecond})
	defer l.end()
	until(t, "A running calls", func() bool { return inFlightOf(c, ss[0].addr) > 0 })

	ss[0].srv.SetServing(false)
	drained := time.Now()
	until(t, "A shielded", func() bool { return healthOf(c, ss[0].addr) == cluster.HealthNotServing })
	seen := time.Since(drained)
	until(t, "A's calls in flight to end", func() bool { return inFlightOf(c, ss[0].addr) == 0 })
	ran := ss[0].calls.Load()
	l.more(t, 200)
	if n := ss[0].calls.Load(); n != ran {
		t.Errorf("the draining A ran %d calls after it was shielded and its calls had ended", n-ran)
	}

	ss[0].srv.SetServing(true)
	served := time.Now()
	until(t, "A back", func() bool { return healthOf(c, ss[0].addr) == cluster.HealthOK })
	back := time.Since(served)
	until(t, "A to run calls again", func() bool { return ss[0].calls.Load() > ran })
	l.end()
	t.Logf("A draining seen %v after SetServing(false), back %v after SetServing(true) (probe interval %v); %d calls",
		seen.Round(time.Millisecond), back.Round(time.Millisecond), interval, l.total.Load())
	if f := l.failures(); len(f) > 0 {
		t.Errorf("%d calls failed, want none (draining finishes the calls it runs): %v", len(f), f[0].err)
	}
	if seen > 20*interval || back > 20*interval {
		t.Errorf("draining seen after %v, back after %v: want about a probe interval (%v)", seen, back, interval)
	}
}

// A server that refuses calls while draining with a 503 rpc.ErrNotServing
// (an interceptor; rpc.ErrShutdown alike) is shielded at that reply,
// without waiting for a probe, and the call, which did not run, is
// retried on another server.
func TestDrainRefusalShieldsAndRetries(t *testing.T) {
	leakcheck.Check(t)
	var draining atomic.Bool
	var refused atomic.Int64
	a := startServerWith(t, "A", nil, rpc.Config{Interceptors: []rpc.Interceptor{
		func(ctx context.Context, iv *rpc.Invocation, next rpc.Next) error {
			if draining.Load() && iv.Action() != "Api/Health" {
				refused.Add(1)
				return rpc.ErrNotServing
			}
			return next(ctx, iv)
		},
	}})
	b := startServer(t, "B", nil)
	c := dial(t, rpc.StaticResolver(endpointsOf(a, b)), roundRobin(t), cluster.Config{
		Retry:         cluster.RetryPolicy{MaxAttempts: 2},
		ProbeInterval: time.Hour,
	})
	must(t, load(c, 4, 1))
	draining.Store(true)
	for range 20 {
		who, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
		if err != nil || who != "B" {
			t.Fatalf("a call while A refuses: %q, %v; want B's answer", who, err)
		}
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("A refused %d calls, want 1 (then it is shielded)", n)
	}
	if h := healthOf(c, a.addr); h != cluster.HealthNotServing {
		t.Errorf("A's health after its refusal: %v, want not serving", h)
	}
}

// A server without Api/Health (a NewLife server answers 404) is asked
// once, then no more while it is healthy; it keeps taking calls.
func TestNoHealthActionNotPolled(t *testing.T) {
	leakcheck.Check(t)
	var asked atomic.Int64
	a := startServerWith(t, "A", nil, rpc.Config{Interceptors: []rpc.Interceptor{
		func(ctx context.Context, iv *rpc.Invocation, next rpc.Next) error {
			if iv.Action() == "Api/Health" {
				asked.Add(1)
				return rpc.NewError(rpc.CodeNotFound, "no action Api/Health")
			}
			return next(ctx, iv)
		},
	}})
	const interval = 20 * time.Millisecond
	c := dial(t, rpc.StaticResolver{{Addr: a.addr}}, roundRobin(t), cluster.Config{ProbeInterval: interval})
	must(t, load(c, 1, 1))
	until(t, "a probe", func() bool { return asked.Load() >= 1 })
	time.Sleep(10 * interval) // ten more ticks: none may ask again
	if n := asked.Load(); n != 1 {
		t.Errorf("Api/Health asked %d times of a server without it, want 1", n)
	}
	must(t, load(c, 10, 1))
	if h := healthOf(c, a.addr); h != cluster.HealthOK {
		t.Errorf("health %v, want ok", h)
	}
}

// The health settings' ranges, and Health's text form.
func TestHealthConfigAndText(t *testing.T) {
	leakcheck.Check(t)
	for i, cfg := range []cluster.Config{
		{ProbeInterval: time.Millisecond},
		{ProbeInterval: 2 * time.Hour},
		{ProbeTimeout: -1},
		{ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 200 * time.Millisecond},
		{ProbeTimeout: 2 * time.Second}, // over the default interval
		{ShieldTimeouts: cluster.MaxShieldTimeouts + 1},
	} {
		if err := cfg.Validate(); !errors.Is(err, cluster.ErrConfig) {
			t.Errorf("config %d (%+v): Validate = %v, want ErrConfig", i, cfg, err)
		}
	}
	for _, cfg := range []cluster.Config{{ProbeInterval: -1}, {ProbeInterval: -1, ProbeTimeout: time.Hour}, {ShieldTimeouts: -1}} {
		must(t, cfg.Validate())
	}
	d := cluster.DefaultConfig()
	if d.ProbeInterval != cluster.DefaultProbeInterval || d.ProbeTimeout != cluster.DefaultProbeInterval/2 || d.ShieldTimeouts != cluster.DefaultShieldTimeouts {
		t.Errorf("DefaultConfig's health settings: %v, %v, %d", d.ProbeInterval, d.ProbeTimeout, d.ShieldTimeouts)
	}
	for _, h := range []cluster.Health{cluster.HealthOK, cluster.HealthNoReply, cluster.HealthNotServing} {
		b, err := h.MarshalText()
		must(t, err)
		var back cluster.Health
		if err := back.UnmarshalText(b); err != nil || back != h {
			t.Errorf("%v: text %q reads back as %v, %v", h, b, back, err)
		}
	}
	var h cluster.Health
	if err := h.UnmarshalText([]byte("sick")); err == nil {
		t.Error(`UnmarshalText("sick"): no error`)
	}
	if s := cluster.Health(7).String(); s != "Health(7)" {
		t.Errorf("Health(7) = %q", s)
	}
}

// proxy passes TCP connections to target until cut: then no byte passes
// either way, the connections staying open, as over a link set down. Those
// open at the cut stay silent for good (TCP's retransmission backoff after
// a long partition keeps a connection silent for many seconds); those made
// after it pass once the link is healed.
type proxy struct {
	ln     net.Listener
	target string
	done   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	gen     int           // the cut count: connections of an older one are stuck
	open    chan struct{} // closed while the link is up
	conns   []net.Conn
	stuck   atomic.Int64 // bytes held on stuck connections
	accepts atomic.Int64 // connections accepted
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p := &proxy{ln: ln, target: target, done: make(chan struct{}), open: make(chan struct{})}
	close(p.open)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) cut() {
	p.mu.Lock()
	p.gen++
	p.open = make(chan struct{})
	p.mu.Unlock()
}

func (p *proxy) heal() {
	p.mu.Lock()
	close(p.open)
	p.mu.Unlock()
}

func (p *proxy) stuckBytes() int64 { return p.stuck.Load() }

func (p *proxy) close() {
	close(p.done)
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// gate waits until a connection of generation gen may pass the n bytes
// it read: false if it never may again (cut since it was made: the bytes
// are held, the connection silent until the proxy closes) or the proxy
// closed.
func (p *proxy) gate(gen, n int) bool {
	for {
		p.mu.Lock()
		g, open := p.gen, p.open
		p.mu.Unlock()
		if g != gen {
			p.stuck.Add(int64(n))
			<-p.done
			return false
		}
		select {
		case <-open:
			p.mu.Lock()
			g = p.gen
			p.mu.Unlock()
			if g == gen {
				return true
			}
		case <-p.done:
			return false
		}
	}
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		c.Close()
		return false
	default:
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			return
		}
		p.accepts.Add(1)
		p.mu.Lock()
		gen, open := p.gen, p.open
		p.mu.Unlock()
		p.wg.Go(func() {
			select { // a connection made during a cut waits for the link
			case <-open:
			case <-p.done:
				return
			}
			p.mu.Lock()
			gen = max(gen, p.gen) // made during a cut: of the cut's generation, passing once healed
			p.mu.Unlock()
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				return
			}
			if !p.track(out) {
				return
			}
			p.wg.Go(func() { p.pump(out, in, gen) })
			p.pump(in, out, gen)
		})
	}
}

// pump copies src to dst while the gate lets it, then closes both.
func (p *proxy) pump(src, dst net.Conn, gen int) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate(gen, n) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
