//go:build linux

package etcd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
	"github.com/lifenet/lifenet/rpc/cluster"
	"github.com/lifenet/lifenet/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The drill's child processes besides the lifenet command's: TestDrill
// runs the test binary again in a host's namespace with
// -test.run=^TestDrillHelper$ and drillRoleEnv set to the role, "server",
// "client" or "hog". Each role speaks on stdout in lines, reads stdin,
// exits when stdin closes (the test is gone) and, in any case, after
// drillChildLife.
const (
	drillRoleEnv   = "LIFENET_DRILL_ROLE"
	drillEtcdEnv   = "LIFENET_DRILL_ETCD"   // etcd's client address
	drillServerEnv = "LIFENET_DRILL_SERVER" // server: "name addr weight"
	drillService   = "drill"
	drillTTL       = 6 * time.Second // the servers' lease TTL (the role's and lifenet serve's)
	drillBaseDelay = 2 * time.Millisecond
	drillChildLife = 3 * time.Minute
)

func TestDrillHelper(t *testing.T) {
	role := os.Getenv(drillRoleEnv)
	if role == "" {
		t.Skip("a child process of TestDrill only")
	}
	go func() {
		time.Sleep(drillChildLife) // bounds an orphan
		os.Exit(3)
	}()
	var err error
	switch role {
	case "hog":
		drillHogRole()
	case "server":
		err = drillServerRole()
	case "client":
		err = drillClientRole()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "drill %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// waitStdin returns when stdin closes.
func waitStdin() {
	s := bufio.NewScanner(os.Stdin)
	for s.Scan() {
	}
}

// drillHogRole is a CPU hog: GOMAXPROCS busy loops (TestDrill pins the
// process to one CPU with taskset and sets GOMAXPROCS to 4, so that a
// server on that CPU gets a fifth of it while it is busy), until stdin
// closes.
func drillHogRole() {
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for n := 0; ; n++ {
				hogSink.Store(int64(n))
			}
		}()
	}
	fmt.Println("ready")
	waitStdin()
}

var hogSink atomic.Int64

// drillServerRole serves Drill/Who (prints "run ID NS" when a call starts,
// waits drillBaseDelay, answers its name) on addr, registers in etcd with
// drillTTL and weight, prints "state STATE NS" on each registration state
// and "ready" once registered.
func drillServerRole() error {
	var name, addr string
	var weight int
	if _, err := fmt.Sscan(os.Getenv(drillServerEnv), &name, &addr, &weight); err != nil {
		return err
	}
	var out sync.Mutex
	say := func(format string, a ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", a...) // unbuffered: a SIGKILL loses no line
	}
	srv, err := rpc.NewServer(rpc.Config{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if err := rpc.Handle(srv, "Drill/Who", func(_ context.Context, id int64) (string, error) {
		say("run %d %d", id, time.Now().UnixNano())
		time.Sleep(drillBaseDelay)
		return name, nil
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.Listen(ctx, "tcp", addr); err != nil {
		return err
	}
	cli, err := clientv3.New(clientConfig(os.Getenv(drillEtcdEnv)))
	if err != nil {
		return err
	}
	reg, err := Register(ctx, cli, drillService, rpc.Endpoint{Addr: addr, Weight: weight}, RegisterConfig{
		TTL:     drillTTL,
		OnState: func(s State, _ error) { say("state %s %d", s, time.Now().UnixNano()) },
	})
	if err != nil {
		return err
	}
	say("ready")
	waitStdin()
	reg.Close(context.Background())
	srv.Close()
	cli.Close()
	return nil
}

// drillCmd is a command of the test to the client role, one JSON line on
// its stdin.
type drillCmd struct {
	Op string `json:"op"` // "start", "run", "stop", "quit"
	// start and run: a load of Conc goroutines, each calling Drill/Who
	// with a new ID, until stop (start), or MaxCalls calls, or Duration.
	Balancer string        `json:"balancer,omitempty"`
	Conc     int           `json:"conc,omitempty"`
	MaxCalls int64         `json:"max_calls,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"` // each call's, and its attempts'
	Attempts int           `json:"attempts,omitempty"`
}

// drillRecord is one call of a load.
type drillRecord struct {
	ID    int64       `json:"id"`
	Start int64       `json:"s"` // unix ns
	End   int64       `json:"e"`
	Picks []drillPick `json:"p"` // each attempt's pick, in order
	Who   string      `json:"w,omitempty"`
	Kind  string      `json:"k"` // ok, notsent, closed, timeout, noserver, other
	Err   string      `json:"err,omitempty"`
}

type drillPick struct {
	Addr string `json:"a"`
	At   int64  `json:"t"`
	// Back: the cluster client gave the pick back unused (Done with
	// Canceled: the endpoint it shields, or one closed meanwhile) and
	// picked again.
	Back bool `json:"b,omitempty"`
}

// drillEvent is a cluster client's log line of an endpoint shielded or
// back (its health).
type drillEvent struct {
	At     int64  `json:"t"`
	Msg    string `json:"m"` // "endpoint shielded", "endpoint back"
	Addr   string `json:"a"`
	Health string `json:"h,omitempty"` // shielded: why ("no reply", "not serving")
}

// drillSet is an endpoint set the resolver reported.
type drillSet struct {
	At    int64    `json:"t"`
	Addrs []string `json:"a"`
}

// drillReply is the client role's answer to a command.
type drillReply struct {
	Op        string                  `json:"op"`
	Err       string                  `json:"err,omitempty"`
	Issued    int64                   `json:"issued,omitempty"`
	Records   []drillRecord           `json:"records,omitempty"`
	Sets      []drillSet              `json:"sets,omitempty"`
	Endpoints []cluster.EndpointState `json:"endpoints,omitempty"`
	Events    []drillEvent            `json:"events,omitempty"`
}

func drillKind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, rpc.ErrNotSent):
		return "notsent"
	case errors.Is(err, rpc.ErrConnClosed):
		return "closed"
	case errors.Is(err, rpc.ErrTimeout):
		return "timeout"
	case errors.Is(err, rpc.ErrNoServer):
		return "noserver"
	}
	return "other"
}

// drillClientRole runs loads through a cluster.Client resolved from etcd,
// as the test commands on stdin, and answers each command with a JSON line.
func drillClientRole() error {
	cli, err := clientv3.New(clientConfig(os.Getenv(drillEtcdEnv)))
	if err != nil {
		return err
	}
	defer cli.Close()
	enc := json.NewEncoder(os.Stdout)
	reply := func(r drillReply) {
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "drill client:", err)
			os.Exit(1)
		}
	}
	reply(drillReply{Op: "ready"})
	var next atomic.Int64 // call IDs, unique over the loads
	var cur *drillLoad
	s := bufio.NewScanner(os.Stdin)
	for s.Scan() {
		var c drillCmd
		if err := json.Unmarshal(s.Bytes(), &c); err != nil {
			reply(drillReply{Op: "error", Err: err.Error()})
			continue
		}
		switch c.Op {
		case "start", "run":
			l, err := startDrillLoad(cli, c, &next)
			if err != nil {
				reply(drillReply{Op: c.Op, Err: err.Error()})
				continue
			}
			if c.Op == "run" {
				reply(l.wait())
				continue
			}
			cur = l
			reply(drillReply{Op: "start"})
		case "stop":
			if cur == nil {
				reply(drillReply{Op: "stop", Err: "no load"})
				continue
			}
			cur.halt()
			reply(cur.wait())
			cur = nil
		case "quit":
			return nil
		default:
			reply(drillReply{Op: "error", Err: "unknown op " + c.Op})
		}
	}
	return nil
}

// drillLoad is one load: its own resolver, balancer and cluster.Client.
type drillLoad struct {
	c      *cluster.Client
	b      *drillBalancer
	r      *drillResolver
	log    *eventLog
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	issued atomic.Int64 // calls taken against MaxCalls
	begun  atomic.Int64 // calls begun
	mu     sync.Mutex
	recs   []drillRecord
}

func startDrillLoad(cli *clientv3.Client, c drillCmd, next *atomic.Int64) (*drillLoad, error) {
	res, err := NewResolver(cli, drillService, ResolverConfig{})
	if err != nil {
		return nil, err
	}
	b, err := balance.ByName(c.Balancer, balance.Config{})
	if err != nil {
		return nil, err
	}
	l := &drillLoad{
		b:    &drillBalancer{Balancer: b, picks: map[string][]*drillPick{}, last: map[string]*drillPick{}},
		r:    &drillResolver{r: res},
		log:  &eventLog{},
		stop: make(chan struct{}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l.c, err = cluster.Dial(ctx, l.r, l.b, cluster.Config{
		Client: rpc.ClientConfig{
			Timeout:   c.Timeout,
			Transport: transport.ClientConfig{DialTimeout: 300 * time.Millisecond},
		},
		Retry:  cluster.RetryPolicy{MaxAttempts: c.Attempts},
		Logger: slog.New(l.log),
	})
	if err != nil {
		return nil, err
	}
	var deadline <-chan time.Time
	if c.Duration > 0 {
		deadline = time.After(c.Duration)
	}
	go func() {
		select {
		case <-deadline:
			l.halt()
		case <-l.stop:
		}
	}()
	for range c.Conc {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				if c.MaxCalls > 0 && l.issued.Add(1) > c.MaxCalls {
					return
				} else if c.MaxCalls == 0 {
					l.issued.Add(1)
				}
				id := next.Add(1)
				key := strconv.FormatInt(id, 10)
				ctx, cancel := context.WithTimeout(rpc.WithBalanceKey(context.Background(), key), c.Timeout)
				rec := drillRecord{ID: id, Start: time.Now().UnixNano()}
				var who string
				l.begun.Add(1)
				err := l.c.Invoke(ctx, "Drill/Who", id, &who)
				cancel()
				rec.End = time.Now().UnixNano()
				rec.Who, rec.Kind = who, drillKind(err)
				if err != nil {
					rec.Err = err.Error()
				}
				rec.Picks = l.b.take(key)
				l.mu.Lock()
				l.recs = append(l.recs, rec)
				l.mu.Unlock()
			}
		}()
	}
	return l, nil
}

func (l *drillLoad) halt() { l.once.Do(func() { close(l.stop) }) }

func (l *drillLoad) wait() drillReply {
	l.wg.Wait()
	l.halt()
	r := drillReply{Op: "result", Endpoints: l.c.Endpoints()}
	l.c.Close()
	l.mu.Lock()
	r.Records = l.recs
	l.mu.Unlock()
	slices.SortFunc(r.Records, func(a, b drillRecord) int { return int(a.ID - b.ID) })
	r.Issued = l.begun.Load()
	r.Sets = l.r.all()
	r.Events = l.log.all()
	return r
}

// drillBalancer records each pick by the call's balance key (its ID),
// and marks a pick given back (Done with Canceled, which the drill's
// calls, never canceled, get only when the cluster client picks again at
// once): the last pick of that address.
type drillBalancer struct {
	rpc.Balancer
	mu    sync.Mutex
	picks map[string][]*drillPick
	last  map[string]*drillPick // by address
}

func (b *drillBalancer) Pick(info rpc.PickInfo) (string, error) {
	addr, err := b.Balancer.Pick(info)
	if err == nil && info.Key != "" {
		p := &drillPick{Addr: addr, At: time.Now().UnixNano()}
		b.mu.Lock()
		b.picks[info.Key] = append(b.picks[info.Key], p)
		b.last[addr] = p
		b.mu.Unlock()
	}
	return addr, err
}

func (b *drillBalancer) Done(addr string, res rpc.PickResult) {
	if res.Canceled {
		b.mu.Lock()
		if p := b.last[addr]; p != nil {
			p.Back = true
		}
		b.mu.Unlock()
	}
	b.Balancer.Done(addr, res)
}

func (b *drillBalancer) take(key string) []drillPick {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []drillPick
	for _, p := range b.picks[key] {
		out = append(out, *p)
	}
	delete(b.picks, key)
	return out
}

// eventLog is a cluster client's slog handler that keeps the lines of
// endpoints shielded and back.
type eventLog struct {
	mu     sync.Mutex
	events []drillEvent
}

func (h *eventLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *eventLog) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *eventLog) WithGroup(string) slog.Handler                { return h }

func (h *eventLog) Handle(_ context.Context, r slog.Record) error {
	msg, ok := strings.CutPrefix(r.Message, "cluster: ")
	if !ok || (msg != "endpoint shielded" && msg != "endpoint back") {
		return nil
	}
	ev := drillEvent{At: r.Time.UnixNano(), Msg: msg}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "addr":
			ev.Addr = a.Value.String()
		case "health":
			ev.Health = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
	return nil
}

func (h *eventLog) all() []drillEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// drillResolver records each set the etcd resolver reports.
type drillResolver struct {
	r    *Resolver
	mu   sync.Mutex
	sets []drillSet
}

func (d *drillResolver) Watch(ctx context.Context, update func([]rpc.Endpoint)) error {
	return d.r.Watch(ctx, func(eps []rpc.Endpoint) {
		s := drillSet{At: time.Now().UnixNano(), Addrs: addrsOf(eps)}
		slices.Sort(s.Addrs)
		d.mu.Lock()
		d.sets = append(d.sets, s)
		d.mu.Unlock()
		update(eps)
	})
}

func (d *drillResolver) all() []drillSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.sets)
}
