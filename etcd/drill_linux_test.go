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
// hosts (a fourth joins mid-run) and a client host. It runs the lifenet
// commands, built from ../cmd/lifenet and ../cmd/lifenet-etcd:
// lifenet-etcd on the etcd host,
// `lifenet serve --register etcd://…/bench` on each server host, and
// `lifenet rpcload --remote etcd://…/bench --balancer …` on the client
// host, whose SUMMARY line (each endpoint's attempts) and cluster log
// (endpoints shielded, back, added, removed) the balance, SIGKILL and
// partition rows read. Beside each lifenet serve a server of this test
// binary (TestDrillHelper's roles) serves the service "drill", whose
// calls each print the call's ID, and a client role runs loads of those
// calls that report each call (its picks, its outcome): the rows that
// check that no call ran twice, and where each call went, read them. It
// needs root, ip(8) and the go command, and skips without them.
//
// Each figure is logged and written to the file $LIFENET_DRILL_RESULTS
// (default: lifenet-drill-results.txt in the temp dir), which
// docs/scale-out.md quotes:
//
//	cd etcd && sudo go test -count=1 -run '^TestDrill$' -v .
func TestDrill(t *testing.T) {
	l := newLab(t)
	began := time.Now()
	d := &drill{t: t, lab: l, servers: map[string]*drillServer{}, cli: map[string]*drillServer{}, runs: map[int64][]drillRun{},
		replies: make(chan drillReply, 16)}
	t.Cleanup(func() { d.writeResults(time.Since(began)) })
	d.lifenet = buildLifenet(t)
	built := time.Since(began)

	etcdIP := l.addHost("etcd", 10)
	d.etcdAddr = etcdIP + ":2379"
	for i, s := range []string{"s1", "s2", "s3", "s4"} {
		l.addHost(s, 11+i)
	}
	l.addHost("client", 100)
	d.figure("topology: switch netns %s (bridge br0), hosts etcd %s, s1–s4 %s11–14, client %s100 (/24), each on a veth to the bridge; lifenet built in %v, setup %v",
		l.sw, etcdIP, labNet, labNet, built.Round(time.Millisecond), (time.Since(began) - built).Round(time.Millisecond))

	d.etcdDir = t.TempDir()
	d.startEtcd()
	for i, s := range []string{"s1", "s2", "s3"} {
		cpus := ""
		if s == "s3" && runtime.NumCPU() >= 2 {
			cpus = hogCPU // with the hog of balance/p2c
		}
		d.startCLIServer(t, s, i+1, cpus)
		d.startServer(t, s, i+1)
	}
	d.startClient()
	d.figure("hosts up (lifenet-etcd; on s1–s3 a lifenet serve --register --weight 1/2/3 --ttl %v, s3's pinned to CPU %s, and a role server; the client role) %v after the start",
		drillTTL, hogCPU, time.Since(began).Round(time.Millisecond))

	t.Run("balance", d.balance)
	t.Run("sigkill", d.sigkill)
	t.Run("partition", d.partition)
	t.Run("etcd-down", d.etcdDown)
	t.Run("fourth-server", d.fourth)

	// Over every load of the role client: no call ran twice.
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
	d.figure("all loads of the role client: %d calls ran on the role servers, %d of them more than once", total, twice)
	took := time.Since(began) - built
	d.figure("drill time %v (and lifenet's build %v)", took.Round(time.Millisecond), built.Round(time.Millisecond))
	if took > 120*time.Second {
		t.Errorf("the drill took %v, want under 120 s", took)
	}
}

// hogCPU is the CPU s3's lifenet serve and balance/p2c's hog are pinned
// to; the p2c loads run on the other.
const (
	hogCPU    = "1"
	clientCPU = "0"
)

type drill struct {
	t       *testing.T
	lab     *lab
	lifenet string // the lifenet command

	etcdAddr string
	etcdDir  string
	etcd     *proc

	servers map[string]*drillServer // role servers (service "drill"), by host
	cli     map[string]*drillServer // lifenet serve (service "bench"), by host
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

// drillServer is a server process: a role server or a lifenet serve.
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

func (d *drill) startServer(t *testing.T, name string, weight int) *drillServer {
	t.Helper()
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "s"))
	s := &drillServer{name: name, addr: fmt.Sprintf("%s%d:%d", labNet, 10+n, drillPort), ready: make(chan struct{})}
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

// attempts returns a record's picks that went out as attempts (not given
// back by the cluster client).
func attempts(r drillRecord) []drillPick {
	var out []drillPick
	for _, p := range r.Picks {
		if !p.Back {
			out = append(out, p)
		}
	}
	return out
}

// lastAttempt is a record's last attempt (Addr "" if none went out).
func lastAttempt(r drillRecord) drillPick {
	a := attempts(r)
	if len(a) == 0 {
		return drillPick{}
	}
	return a[len(a)-1]
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
