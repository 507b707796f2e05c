//go:build linux

package etcd

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDrill is the failure drill of issue 29 across hosts: network
// namespaces joined by a bridge (see lab), an etcd host, three server
// hosts (a fourth joins mid-run) and a client host, each host a process
// of this test binary (TestDrillHelper's roles). The client host runs the
// load through etcd's resolver and a cluster.Client and reports each call
// (its picks, its outcome); the servers report each call they run. It
// needs root and ip(8), and skips without them.
//
// Each figure is logged and written to the file $LIFENET_DRILL_RESULTS
// (default: lifenet-drill-results.txt in the temp dir), which
// docs/scale-out.md quotes:
//
//	cd etcd && sudo go test -count=1 -run '^TestDrill$' -v .
func TestDrill(t *testing.T) {
	l := newLab(t)
	began := time.Now()
	d := &drill{t: t, lab: l, servers: map[string]*drillServer{}, runs: map[int64][]drillRun{},
		replies: make(chan drillReply, 16), etcdReady: make(chan time.Time, 4)}
	t.Cleanup(func() { d.writeResults(time.Since(began)) })

	etcdIP := l.addHost("etcd", 10)
	d.etcdAddr = etcdIP + ":2379"
	for i, s := range []string{"s1", "s2", "s3", "s4"} {
		l.addHost(s, 11+i)
	}
	l.addHost("client", 100)
	d.figure("topology: switch netns %s (bridge br0), hosts etcd %s, s1–s4 %s11–14, client %s100 (/24), each on a veth to the bridge; setup %v",
		l.sw, etcdIP, labNet, labNet, time.Since(began).Round(time.Millisecond))

	d.etcdDir = t.TempDir()
	d.startEtcd()
	for i, s := range []string{"s1", "s2", "s3"} {
		d.startServer(t, s, i+1)
	}
	d.startClient()
	d.figure("hosts up (etcd, 3 servers registered with TTL %v, client) %v after the start", drillTTL, time.Since(began).Round(time.Millisecond))

	t.Run("balance", d.balance)
	t.Run("sigkill", d.sigkill)
	t.Run("partition", d.partition)
	t.Run("etcd-down", d.etcdDown)
	t.Run("fourth-server", d.fourth)

	// Over every load: no call ran twice.
	time.Sleep(100 * time.Millisecond)
	d.mu.Lock()
	total, twice := 0, 0
	for id, runs := range d.runs {
		total += len(runs)
		if len(runs) > 1 {
			twice++
			t.Errorf("call %d ran %d times: %v", id, len(runs), runs)
		}
	}
	d.mu.Unlock()
	d.figure("all loads: %d calls ran on the servers, %d of them more than once", total, twice)
	took := time.Since(began)
	d.figure("drill time %v", took.Round(time.Millisecond))
	if took > 120*time.Second {
		t.Errorf("the drill took %v, want under 120 s", took)
	}
}

type drill struct {
	t   *testing.T
	lab *lab

	etcdAddr  string
	etcdDir   string
	etcd      *proc
	etcdReady chan time.Time

	servers map[string]*drillServer
	client  *proc
	replies chan drillReply

	mu     sync.Mutex
	runs   map[int64][]drillRun // by call ID: where it ran
	report []string
}

type drillRun struct {
	Server string
	At     int64
}

type drillServer struct {
	name, addr string
	p          *proc
	ready      chan struct{}
	mu         sync.Mutex
	states     []drillState
}

type drillState struct {
	State string
	At    time.Time
}

// figure logs a measured figure and keeps it for the results file.
func (d *drill) figure(format string, args ...any) {
	d.t.Helper()
	s := fmt.Sprintf(format, args...)
	d.t.Log(s)
	d.mu.Lock()
	d.report = append(d.report, s)
	d.mu.Unlock()
}

func (d *drill) writeResults(took time.Duration) {
	path := os.Getenv("LIFENET_DRILL_RESULTS")
	if path == "" {
		path = filepath.Join(os.TempDir(), "lifenet-drill-results.txt")
	}
	kernel, _ := exec.Command("uname", "-sr").Output()
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "# lifenet failure drill (etcd: go test -count=1 -run '^TestDrill$' -v .)\n")
	fmt.Fprintf(&b, "# %s, %s, %s, %d CPUs, %v", time.Now().UTC().Format(time.RFC3339), strings.TrimSpace(string(kernel)), runtime.Version(), runtime.NumCPU(), took.Round(time.Millisecond))
	if d.t.Failed() {
		b.WriteString(", FAILED")
	}
	b.WriteString("\n")
	for _, s := range d.report {
		b.WriteString(s + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		d.t.Logf("results file: %v", err)
		return
	}
	d.t.Logf("results written to %s", path)
}

func (d *drill) startEtcd() time.Time {
	d.t.Helper()
	d.etcd = d.lab.start("etcd", "etcd", "etcd", func(at time.Time, line string) {
		if strings.HasPrefix(line, "ready") {
			d.etcdReady <- at
		}
	}, drillEtcdEnv+"="+d.etcdDir+" "+strings.TrimSuffix(d.etcdAddr, ":2379"))
	select {
	case at := <-d.etcdReady:
		return at
	case <-d.etcd.exited:
		d.t.Fatalf("etcd exited: %s", d.etcd.stderr.String())
	case <-time.After(30 * time.Second):
		d.t.Fatalf("etcd not ready in 30 s: %s", d.etcd.stderr.String())
	}
	return time.Time{}
}

func (d *drill) startServer(t *testing.T, name string, weight int) *drillServer {
	t.Helper()
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "s"))
	s := &drillServer{name: name, addr: fmt.Sprintf("%s%d:5500", labNet, 10+n), ready: make(chan struct{})}
	s.p = d.lab.start(name, name, "server", func(at time.Time, line string) {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "run":
			id, _ := strconv.ParseInt(f[1], 10, 64)
			ns, _ := strconv.ParseInt(f[2], 10, 64)
			d.mu.Lock()
			d.runs[id] = append(d.runs[id], drillRun{Server: name, At: ns})
			d.mu.Unlock()
		case len(f) == 3 && f[0] == "state":
			ns, _ := strconv.ParseInt(f[2], 10, 64)
			s.mu.Lock()
			s.states = append(s.states, drillState{State: f[1], At: time.Unix(0, ns)})
			s.mu.Unlock()
		case len(f) == 1 && f[0] == "ready":
			close(s.ready)
		}
	}, drillServerEnv+"="+fmt.Sprintf("%s %s %d", name, s.addr, weight), drillEtcdEnv+"="+d.etcdAddr)
	select {
	case <-s.ready:
	case <-s.p.exited:
		t.Fatalf("%s exited: %s", name, s.p.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("%s not registered in 20 s: %s", name, s.p.stderr.String())
	}
	d.servers[name] = s
	return s
}

// registeredAfter returns the first time s reported StateRegistered after
// since, waiting up to timeout.
func (s *drillServer) registeredAfter(since time.Time, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	for {
		s.mu.Lock()
		for _, st := range s.states {
			if st.State == StateRegistered.String() && st.At.After(since) {
				s.mu.Unlock()
				return st.At, true
			}
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *drillServer) statesSince(since time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.states {
		if st.At.After(since) {
			out = append(out, fmt.Sprintf("%s +%v", st.State, st.At.Sub(since).Round(time.Millisecond)))
		}
	}
	return out
}

func (d *drill) startClient() {
	d.t.Helper()
	d.client = d.lab.start("client", "client", "client", func(_ time.Time, line string) {
		var r drillReply
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			r = drillReply{Op: "error", Err: fmt.Sprintf("client said %q: %v", line, err)}
		}
		d.replies <- r
	}, drillEtcdEnv+"="+d.etcdAddr)
	r := d.wait(d.t, 20*time.Second)
	if r.Op != "ready" {
		d.t.Fatalf("client: %+v", r)
	}
}

func (d *drill) wait(t *testing.T, timeout time.Duration) drillReply {
	t.Helper()
	select {
	case r := <-d.replies:
		if r.Err != "" {
			t.Fatalf("client %s: %s", r.Op, r.Err)
		}
		return r
	case <-d.client.exited:
		t.Fatalf("client exited: %s", d.client.stderr.String())
	case <-time.After(timeout):
		t.Fatalf("client: no answer in %v; stderr: %s", timeout, d.client.stderr.String())
	}
	return drillReply{}
}

// cmd sends c to the client and waits for its answer.
func (d *drill) cmd(t *testing.T, c drillCmd, timeout time.Duration) drillReply {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.client.send(b); err != nil {
		t.Fatalf("client: %v", err)
	}
	return d.wait(t, timeout)
}

// slow sets server's handler delay (0: back to drillBaseDelay).
func (d *drill) slow(t *testing.T, server string, ms int64) {
	t.Helper()
	d.cmd(t, drillCmd{Op: "call", Addr: d.servers[server].addr, Action: "Drill/Slow", Arg: ms}, 10*time.Second)
}

// nameOf returns the server name of addr.
func (d *drill) nameOf(addr string) string {
	for _, s := range d.servers {
		if s.addr == addr {
			return s.name
		}
	}
	return addr
}

func (d *drill) ranOn(id int64) []drillRun {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.runs[id])
}

// lastPick is the address of a record's last attempt.
func lastPick(r drillRecord) string {
	if len(r.Picks) == 0 {
		return ""
	}
	return r.Picks[len(r.Picks)-1].Addr
}

// tally counts a load's outcomes: successes by server, failures by kind.
func tally(recs []drillRecord) (ok map[string]int, failed map[string]int, nOK int) {
	ok, failed = map[string]int{}, map[string]int{}
	for _, r := range recs {
		if r.Kind == "ok" {
			ok[r.Who]++
			nOK++
		} else {
			failed[r.Kind]++
		}
	}
	return ok, failed, nOK
}

func sharesText(ok map[string]int, n int) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(ok)) {
		parts = append(parts, fmt.Sprintf("%s %d (%.1f %%)", s, ok[s], 100*float64(ok[s])/float64(max(n, 1))))
	}
	return strings.Join(parts, ", ")
}

func span(recs []drillRecord) time.Duration {
	if len(recs) == 0 {
		return 0
	}
	lo, hi := recs[0].Start, recs[0].End
	for _, r := range recs {
		lo, hi = min(lo, r.Start), max(hi, r.End)
	}
	return time.Duration(hi - lo).Round(time.Millisecond)
}

// checkRuns checks that each successful call ran exactly once, on the
// server that answered, and that no call ran twice.
func (d *drill) checkRuns(t *testing.T, recs []drillRecord) {
	t.Helper()
	time.Sleep(100 * time.Millisecond) // the servers' last "run" lines
	bad := 0
	for _, r := range recs {
		runs := d.ranOn(r.ID)
		switch {
		case len(runs) > 1:
			t.Errorf("call %d ran %d times: %v", r.ID, len(runs), runs)
		case r.Kind == "ok" && (len(runs) != 1 || runs[0].Server != r.Who):
			if bad++; bad <= 5 {
				t.Errorf("call %d answered by %s, ran on %v", r.ID, r.Who, runs)
			}
		}
	}
}

const (
	drillCalls = 3000
	drillConc  = 6
)

// balance: the shares of round-robin, weighted (1:2:3) and p2c with one
// server slowed.
func (d *drill) balance(t *testing.T) {
	run := func(t *testing.T, balancer string) (map[string]int, int, []drillRecord) {
		r := d.cmd(t, drillCmd{Op: "run", Balancer: balancer, Conc: drillConc, MaxCalls: drillCalls, Timeout: 2 * time.Second, Attempts: 3}, 60*time.Second)
		ok, failed, n := tally(r.Records)
		if n != drillCalls {
			t.Errorf("%d of %d calls succeeded; failed: %v", n, drillCalls, failed)
		}
		d.checkRuns(t, r.Records)
		return ok, n, r.Records
	}
	check := func(t *testing.T, ok map[string]int, n int, want map[string]float64) {
		for s, w := range want {
			got := 100 * float64(ok[s]) / float64(n)
			if got < w-3 || got > w+3 {
				t.Errorf("%s took %.1f %% of the calls, want %.1f ± 3", s, got, w)
			}
		}
	}
	t.Run("round-robin", func(t *testing.T) {
		ok, n, recs := run(t, "round-robin")
		d.figure("balance round-robin: %d calls (%d goroutines) in %v: %s", n, drillConc, span(recs), sharesText(ok, n))
		check(t, ok, n, map[string]float64{"s1": 100.0 / 3, "s2": 100.0 / 3, "s3": 100.0 / 3})
	})
	t.Run("weighted", func(t *testing.T) {
		ok, n, recs := run(t, "weighted")
		d.figure("balance weighted 1:2:3: %d calls in %v: %s (want 16.7 / 33.3 / 50.0 %%)", n, span(recs), sharesText(ok, n))
		check(t, ok, n, map[string]float64{"s1": 100.0 / 6, "s2": 200.0 / 6, "s3": 300.0 / 6})
	})
	t.Run("p2c", func(t *testing.T) {
		ok, n, recs := run(t, "p2c")
		d.figure("balance p2c, equal servers (%v a call): %d calls in %v: %s", drillBaseDelay, n, span(recs), sharesText(ok, n))
		const slowMs = 20
		d.slow(t, "s3", slowMs)
		defer d.slow(t, "s3", 0)
		ok, n, recs = run(t, "p2c")
		d.figure("balance p2c, s3 slowed to %d ms a call (a server-side sleep): %d calls in %v: %s", slowMs, n, span(recs), sharesText(ok, n))
		if got := 100 * float64(ok["s3"]) / float64(n); got > 100.0/6 {
			t.Errorf("slowed s3 took %.1f %% of the calls, want under half of its 33 %%", got)
		}
	})
}

// sigkill: a server killed mid-load.
func (d *drill) sigkill(t *testing.T) {
	victim := d.servers["s1"]
	d.cmd(t, drillCmd{Op: "start", Balancer: "round-robin", Conc: 8, Timeout: 2 * time.Second, Attempts: 3, Duration: 30 * time.Second}, 20*time.Second)
	time.Sleep(time.Second)
	killed := victim.p.kill()
	time.Sleep(drillTTL + time.Second) // past the lease's expiry
	r := d.cmd(t, drillCmd{Op: "stop"}, 30*time.Second)
	recs := r.Records
	kns := killed.UnixNano()
	ok, failed, n := tally(recs)
	d.checkRuns(t, recs)

	// The client sees the death when s1's connection closes, a moment
	// after the signal went: the first failure's end.
	seen := int64(0)
	for _, rec := range recs {
		if rec.Kind != "ok" && (seen == 0 || rec.End < seen) {
			seen = rec.End
		}
	}
	var fails, ranFails, inGap int
	var lastFail time.Duration
	var sample string
	for _, rec := range recs {
		if rec.Kind == "ok" {
			continue
		}
		fails++
		sample = rec.Err
		if rec.Kind != "closed" {
			t.Errorf("call %d failed with %s (%s), want rpc.ErrConnClosed", rec.ID, rec.Kind, rec.Err)
		}
		if lastPick(rec) != victim.addr {
			t.Errorf("call %d failed on %s, not on the killed server", rec.ID, d.nameOf(lastPick(rec)))
		}
		if rec.Start > seen {
			t.Errorf("call %d started %v after the client saw s1's connection close and failed: %s", rec.ID, time.Duration(rec.Start-seen), rec.Err)
		}
		if rec.Start > kns {
			inGap++
		}
		lastFail = max(lastFail, time.Duration(rec.End-kns))
		if runs := d.ranOn(rec.ID); len(runs) == 1 {
			ranFails++
		}
	}
	var last int64
	var after []string
	for _, rec := range recs {
		for _, p := range rec.Picks {
			if p.Addr == victim.addr {
				last = max(last, p.At)
				if p.At > kns {
					after = append(after, fmt.Sprintf("+%v %s", time.Duration(p.At-kns).Round(time.Millisecond), rec.Kind))
				}
			}
		}
	}
	gone := time.Duration(-1)
	for _, s := range r.Sets {
		if s.At > kns && !slices.Contains(s.Addrs, victim.addr) {
			gone = time.Duration(s.At - kns)
			break
		}
	}
	lastAfter := time.Duration(last - kns)
	d.figure("sigkill: s1 killed 1 s into a round-robin load of 8 goroutines (non-idempotent calls, %v each, retries 3): %d calls in %v, %d ok (%s)",
		drillBaseDelay, len(recs), span(recs), n, sharesText(ok, n))
	d.figure("sigkill: the client saw s1's connection close %v after the SIGKILL went; %d calls failed %v, all in flight on s1 then (%d picked for it between the signal and the close; %d had started running on s1), the last %v after the kill; e.g. %q",
		time.Duration(seen-kns).Round(100*time.Microsecond), fails, failed, inGap, ranFails, lastFail.Round(time.Millisecond), sample)
	if r.Issued != int64(len(recs)) {
		t.Errorf("%d calls begun, %d ended", r.Issued, len(recs))
	}
	d.figure("sigkill: attempts picked for s1 after the kill: %d %v; the last %v after the kill; s1 left the resolver's set %v after the kill (TTL %v)",
		len(after), after, lastAfter.Round(time.Millisecond), gone.Round(time.Millisecond), drillTTL)
	if lastAfter > time.Second {
		t.Errorf("an attempt went to the killed server %v after the kill, want ≤ 1 s", lastAfter)
	}
	if fails == 0 {
		t.Log("no call was in flight on s1 at the kill")
	}
	delete(d.servers, "s1")
}

// partition: a server's switch port set down, then up, under
// round-robin (which keeps sending it its share: a timeout is a latency
// sample, not unavailability) and p2c (which weighs the latency).
func (d *drill) partition(t *testing.T) {
	t.Run("round-robin", func(t *testing.T) { d.partitionWith(t, "round-robin") })
	t.Run("p2c", func(t *testing.T) { d.partitionWith(t, "p2c") })
}

func (d *drill) partitionWith(t *testing.T, balancer string) {
	victim := d.servers["s2"]
	const timeout = 500 * time.Millisecond
	const shield = 500 * time.Millisecond
	const down = 5 * time.Second
	d.cmd(t, drillCmd{Op: "start", Balancer: balancer, Conc: drillConc, Timeout: timeout, Shield: shield, Attempts: 3, Duration: 30 * time.Second}, 20*time.Second)
	time.Sleep(time.Second)
	// Cut off from the down command's return to the up command's start.
	d.lab.link("s2", false)
	cut := time.Now()
	time.Sleep(down)
	healed := time.Now()
	d.lab.link("s2", true)
	back, registered := victim.registeredAfter(healed, 10*time.Second)
	time.Sleep(2 * time.Second)
	r := d.cmd(t, drillCmd{Op: "stop"}, 30*time.Second)
	recs := r.Records
	cns, hns := cut.UnixNano(), healed.UnixNano()
	d.checkRuns(t, recs)

	// Calls on s2 when it was cut off (picked before the cut, ended
	// after it) and calls sent to it while it was cut off.
	var atCut, during, timeouts, ranEarly, ranLate int
	var dmin, dmax time.Duration
	var lastPick int64
	kinds := map[string]int{}
	for _, rec := range recs {
		lp := rec.Picks
		if len(lp) == 0 {
			continue
		}
		p := lp[len(lp)-1]
		if p.Addr != victim.addr {
			if rec.Kind != "ok" {
				t.Errorf("call %d on %s failed: %s", rec.ID, d.nameOf(p.Addr), rec.Err)
			}
			continue
		}
		switch {
		case p.At < cns && rec.End > cns:
			atCut++
		case p.At >= cns && p.At < hns:
			during++
			lastPick = max(lastPick, p.At)
			if rec.Kind == "ok" {
				t.Errorf("call %d, sent to s2 while it was cut off, succeeded", rec.ID)
			}
		default:
			continue
		}
		kinds[rec.Kind]++
		if rec.Kind == "timeout" {
			timeouts++
			took := time.Duration(rec.End - rec.Start)
			if dmin == 0 || took < dmin {
				dmin = took
			}
			dmax = max(dmax, took)
			for _, run := range d.ranOn(rec.ID) {
				if run.At < hns {
					ranEarly++
				} else {
					ranLate++
				}
			}
		}
	}
	last := "none"
	if lastPick > 0 {
		last = fmt.Sprintf("%v after the cut", time.Duration(lastPick-cns).Round(time.Millisecond))
	}
	removed, readded := time.Duration(-1), time.Duration(-1)
	for _, s := range r.Sets {
		has := slices.Contains(s.Addrs, victim.addr)
		if removed < 0 && s.At > cns && s.At < hns && !has {
			removed = time.Duration(s.At - cns)
		}
		if readded < 0 && s.At > hns && has {
			readded = time.Duration(s.At - hns)
		}
	}
	firstOK := time.Duration(-1)
	for _, rec := range recs {
		if rec.Kind == "ok" && rec.Who == "s2" && rec.Start > hns {
			if dt := time.Duration(rec.End - hns); firstOK < 0 || dt < firstOK {
				firstOK = dt
			}
		}
	}
	ok, failed, n := tally(recs)
	d.figure("partition %s: s2's switch port down %v, 1 s into a load of %d goroutines (call timeout %v, ShieldTime %v): %d calls in %v, %d ok (%s), failed %v",
		balancer, down, drillConc, timeout, shield, len(recs), span(recs), n, sharesText(ok, n), failed)
	d.figure("partition %s: calls on s2 at the cut %d, sent to it while cut off %d: %v; the timeouts took %v – %v; of those, %d ran on s2 before the link came back (their replies lost) and %d after it (requests retransmitted by TCP, after the caller had its timeout)",
		balancer, atCut, during, kinds, dmin.Round(time.Millisecond), dmax.Round(time.Millisecond), ranEarly, ranLate)
	d.figure("partition %s: the last call sent to s2: %s; s2 left the resolver's set %v after the cut (its lease, TTL %v, expired)",
		balancer, last, removed.Round(time.Millisecond), drillTTL)
	if registered {
		d.figure("partition %s: link up: s2 registered again %v later, back in the resolver's set %v later, its first answer %v later (states %v)",
			balancer, back.Sub(healed).Round(time.Millisecond), readded.Round(time.Millisecond), firstOK.Round(time.Millisecond), victim.statesSince(cut))
	} else {
		t.Errorf("s2 did not register again within 10 s of the link coming back (states %v)", victim.statesSince(cut))
	}
	if kinds["ok"]+timeouts != atCut+during {
		t.Errorf("calls on the cut-off s2 that neither timed out nor succeeded: %v", kinds)
	}
	if dmin > 0 && (dmin < timeout-20*time.Millisecond || dmax > timeout+300*time.Millisecond) {
		t.Errorf("timeouts took %v – %v, want about %v", dmin, dmax, timeout)
	}
	if removed < 0 {
		t.Errorf("s2 never left the resolver's set while cut off")
	}
	if firstOK < 0 || firstOK > drillTTL {
		t.Errorf("s2's first answer %v after the link came back, want within the TTL %v", firstOK, drillTTL)
	}
}

// etcdDown: etcd killed under load, then started again on its data.
func (d *drill) etcdDown(t *testing.T) {
	const outage = 5 * time.Second
	live := slices.Sorted(maps.Keys(d.servers))
	d.cmd(t, drillCmd{Op: "start", Balancer: "round-robin", Conc: 4, Timeout: time.Second, Attempts: 3, Duration: 40 * time.Second}, 20*time.Second)
	time.Sleep(time.Second)
	killed := d.etcd.kill()
	time.Sleep(outage)
	restarted := time.Now()
	ready := d.startEtcd()
	var backs []string
	for _, s := range live {
		at, ok := d.servers[s].registeredAfter(ready, drillTTL+2*time.Second)
		if !ok {
			t.Errorf("%s did not register again within %v of etcd's return (states %v)", s, drillTTL+2*time.Second, d.servers[s].statesSince(killed))
			continue
		}
		dt := at.Sub(ready)
		backs = append(backs, fmt.Sprintf("%s +%v (states %v)", s, dt.Round(time.Millisecond), d.servers[s].statesSince(killed)))
		if dt > drillTTL {
			t.Errorf("%s registered %v after etcd's return, want within the TTL %v", s, dt, drillTTL)
		}
	}
	time.Sleep(time.Second)
	r := d.cmd(t, drillCmd{Op: "stop"}, 30*time.Second)
	recs := r.Records
	d.checkRuns(t, recs)
	kns, rns := killed.UnixNano(), ready.UnixNano()
	var during []drillRecord
	for _, rec := range recs {
		if rec.Start > kns && rec.End < rns {
			during = append(during, rec)
		}
	}
	okD, failedD, nD := tally(during)
	ok, failed, n := tally(recs)
	var setsDuring []drillSet
	for _, s := range r.Sets {
		if s.At > kns && s.At < rns {
			setsDuring = append(setsDuring, s)
		}
	}
	d.figure("etcd-down: etcd SIGKILLed 1 s into a round-robin load of 4 goroutines, down %v, started again on its data in %v: %d calls in %v, %d ok (%s), failed %v",
		outage, ready.Sub(restarted).Round(time.Millisecond), len(recs), span(recs), n, sharesText(ok, n), failed)
	d.figure("etcd-down: while etcd was down: %d calls, %d ok (%s), failed %v; endpoint sets reported: %d",
		len(during), nD, sharesText(okD, nD), failedD, len(setsDuring))
	d.figure("etcd-down: registrations back after etcd's return: %v", backs)
	if len(during) == 0 || nD != len(during) {
		t.Errorf("while etcd was down: %d calls, %d ok, failed %v", len(during), nD, failedD)
	}
	if len(setsDuring) > 0 {
		t.Errorf("the resolver reported sets while etcd was down: %v", setsDuring)
	}
	if n != len(recs) {
		t.Errorf("%d of %d calls failed: %v", len(recs)-n, len(recs), failed)
	}
}

// fourth: a fourth server started mid-load.
func (d *drill) fourth(t *testing.T) {
	d.cmd(t, drillCmd{Op: "start", Balancer: "round-robin", Conc: 4, Timeout: time.Second, Attempts: 3, Duration: 30 * time.Second}, 20*time.Second)
	time.Sleep(time.Second)
	started := time.Now()
	s4 := d.startServer(t, "s4", 1)
	reg, _ := s4.registeredAfter(started, time.Second)
	time.Sleep(2 * time.Second)
	r := d.cmd(t, drillCmd{Op: "stop"}, 30*time.Second)
	recs := r.Records
	d.checkRuns(t, recs)
	rns := reg.UnixNano()
	firstPick, firstOK, inSet := time.Duration(-1), time.Duration(-1), time.Duration(-1)
	var after []drillRecord
	for _, rec := range recs {
		for _, p := range rec.Picks {
			if p.Addr == s4.addr && (firstPick < 0 || time.Duration(p.At-rns) < firstPick) {
				firstPick = time.Duration(p.At - rns)
			}
		}
		if rec.Kind == "ok" && rec.Who == "s4" && (firstOK < 0 || time.Duration(rec.End-rns) < firstOK) {
			firstOK = time.Duration(rec.End - rns)
		}
		if rec.Start > rns+int64(time.Second) {
			after = append(after, rec)
		}
	}
	for _, s := range r.Sets {
		if slices.Contains(s.Addrs, s4.addr) {
			inSet = time.Duration(s.At - rns)
			break
		}
	}
	ok, failed, n := tally(recs)
	okA, _, nA := tally(after)
	d.figure("fourth-server: s4 started 1 s into a round-robin load of 4 goroutines, registered %v after its start; in the resolver's set %v after registering, first picked %v after, first answer %v after",
		reg.Sub(started).Round(time.Millisecond), inSet.Round(time.Millisecond), firstPick.Round(time.Millisecond), firstOK.Round(time.Millisecond))
	d.figure("fourth-server: %d calls in %v, %d ok (%s), failed %v; from 1 s after its registration: %s",
		len(recs), span(recs), n, sharesText(ok, n), failed, sharesText(okA, nA))
	if firstOK < 0 || firstOK > time.Second {
		t.Errorf("s4's first answer %v after it registered, want within 1 s", firstOK)
	}
	if n != len(recs) {
		t.Errorf("%d of %d calls failed: %v", len(recs)-n, len(recs), failed)
	}
}
