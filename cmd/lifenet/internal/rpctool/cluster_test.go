package rpctool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// syncBuffer is a bytes.Buffer that a command's goroutines write while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// running is a command run by a test on a goroutine: its first stdout
// line, its stderr, and stop, which cancels it and returns its exit code.
type running struct {
	ready  string
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan int
	code   int
	once   sync.Once
}

func (r *running) stop(t *testing.T) int {
	t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case r.code = <-r.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("still running 30 s after its ctx ended; stderr %q", r.stderr)
		}
	})
	return r.code
}

// start runs cmd with args until the test ends (or stop), once it has
// printed its first line, which must start with "READY ".
func start(t *testing.T, cmd func(context.Context, []string, io.Writer, io.Writer) int, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &running{stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		code := cmd(ctx, args, pw, r.stderr)
		pw.Close()
		r.done <- code
	}()
	t.Cleanup(func() { r.stop(t) })
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(pr).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, pr)
	}()
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "READY ") {
			t.Fatalf("%q printed %q; stderr %q", args, line, r.stderr)
		}
		r.ready = strings.TrimSpace(line)
	case <-time.After(40 * time.Second):
		t.Fatalf("%q: no READY line in 40 s; stderr %q", args, r.stderr)
	}
	return r
}

// etcdProcess is a lifenet-etcd run by a test: its READY line and its
// stderr.
type etcdProcess struct {
	cmd    *exec.Cmd
	ready  string
	stderr *syncBuffer
	done   chan struct{} // closed once the process was waited for
	code   int
	once   sync.Once
}

// stop stops it as Ctrl-C does (SIGINT) and returns its exit code; past
// 30 s it is killed and the test fails.
func (e *etcdProcess) stop(t *testing.T) int {
	t.Helper()
	e.once.Do(func() {
		e.cmd.Process.Signal(os.Interrupt)
		select {
		case <-e.done:
		case <-time.After(30 * time.Second):
			e.cmd.Process.Kill()
			<-e.done
			t.Errorf("lifenet-etcd still running 30 s after SIGINT (killed); stderr %q", e.stderr)
		}
		e.code = e.cmd.ProcessState.ExitCode()
	})
	return e.code
}

// buildEtcd builds the lifenet-etcd command (cmd/lifenet-etcd, a module
// of its own so that lifenet compiles no etcd server) into a temp dir and
// returns its path.
func buildEtcd(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the test builds lifenet-etcd: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "lifenet-etcd")
	cmd := exec.Command(goBin, "build", "-o", exe, ".")
	cmd.Dir = filepath.Join("..", "..", "..", "lifenet-etcd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/lifenet-etcd: %v\n%s", err, out)
	}
	return exe
}

// startEtcd runs lifenet-etcd on a free port until the test ends (or
// stop) and returns it and the etcd://HOST:PORT/bench address of a
// service in it.
func startEtcd(t *testing.T) (*etcdProcess, string) {
	t.Helper()
	e := &etcdProcess{stderr: &syncBuffer{}, done: make(chan struct{})}
	e.cmd = exec.Command(buildEtcd(t), "--listen", "127.0.0.1:0")
	e.cmd.Stderr = e.stderr
	stdout, err := e.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, stdout)
		e.cmd.Wait()
		close(e.done)
	}()
	t.Cleanup(func() { e.stop(t) })
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "READY etcd://") {
			t.Fatalf("lifenet-etcd printed %q; stderr %q", line, e.stderr)
		}
		e.ready = strings.TrimSpace(line)
	case <-time.After(40 * time.Second):
		t.Fatalf("lifenet-etcd: no READY line in 40 s; stderr %q", e.stderr)
	}
	addr := strings.Fields(e.ready)[1] // READY etcd://HOST:PORT (…)
	return e, addr + "/bench"
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// dataDir is the temporary data dir lifenet-etcd names on its READY line.
func dataDir(t *testing.T, ready string) string {
	t.Helper()
	_, rest, ok := strings.Cut(ready, "data in ")
	dir, _, ok2 := strings.Cut(rest, ",")
	if !ok || !ok2 {
		t.Fatalf("no data dir in %q", ready)
	}
	return dir
}

// loadThrough runs a short rpcload through etcd with args and returns its
// summary.
func loadThrough(t *testing.T, svc string, args ...string) loadSummary {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"--remote", svc, "--seconds", "0.4", "--warmup", "0.1"}, args...)
	if code := Load(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("rpcload %q: exit %d, %s", args, code, errOut.String())
	}
	var s loadSummary
	for l := range strings.Lines(out.String()) {
		if js, ok := strings.CutPrefix(strings.TrimSpace(l), "SUMMARY: "); ok && json.Unmarshal([]byte(js), &s) == nil {
			return s
		}
	}
	t.Fatalf("rpcload %q printed no SUMMARY: %q", args, out.String())
	return s
}

// TestThroughEtcd: two servers registered in a lifenet-etcd; call and
// rpcload reach them through etcd with every --balancer, and the summary
// counts each endpoint's attempts; a server shut down deregisters at once,
// and with none left a call says no server is registered. etcd's data dir
// goes when it stops.
func TestThroughEtcd(t *testing.T) {
	leakcheck.Check(t)
	e, svc := startEtcd(t)
	s1 := start(t, Serve, "--port", "0", "--udp=false", "--register", svc)
	s2 := start(t, Serve, "--port", "0", "--udp=false", "--register", svc)
	addrOf := func(r *running) string { return strings.TrimPrefix(strings.Fields(r.ready)[1], "tcp://") }
	a1, a2 := addrOf(s1), addrOf(s2)
	for _, s := range []*running{s1, s2} {
		if !strings.Contains(s.stderr.String(), "registered "+addrOf(s)+" in "+svc) {
			t.Errorf("serve --register's stderr: %q, want its registration", s.stderr)
		}
	}

	var out, errOut bytes.Buffer
	if code := Call(context.Background(), []string{svc, "Bench/Add", "a=1", "b=2"}, &out, &errOut); code != 0 || out.String() != "3\n" {
		t.Fatalf("call through etcd: exit %d, out %q, err %q", code, out.String(), errOut.String())
	}

	for _, name := range balancerNames() {
		s := loadThrough(t, svc, "--balancer", name, "--inflight", "4")
		var attempts uint64
		shares := map[string]float64{}
		for _, ep := range s.Endpoints {
			attempts += ep.Attempts
			shares[ep.Addr] = ep.Share
		}
		t.Logf("%s: %d calls, %v", name, s.Calls, s.Endpoints)
		switch {
		case s.Calls == 0 || s.Errors != 0 || s.Balancer != name || len(s.Endpoints) != 2:
			t.Errorf("%s: summary %+v: want calls, no error, the balancer and 2 endpoints", name, s)
		case float64(attempts) < 0.97*float64(s.Calls) || float64(attempts) > 1.03*float64(s.Calls):
			// (attempts that end in the window against calls that start in
			// it: a call per caller apart at each end)
			t.Errorf("%s: %d attempts counted for %d calls, want ± 3 %%", name, attempts, s.Calls)
		case name == "failover" && max(shares[a1], shares[a2]) < 99:
			t.Errorf("failover: shares %v, want every call on one server", shares)
		case (name == "round-robin" || name == "weighted") && (shares[a1] < 40 || shares[a2] < 40):
			t.Errorf("%s: shares %v, want about half each", name, shares)
		}
		// p2c and hash: only the calls and counts are checked. p2c leaves
		// no server alone (each of the two drawn gets calls at odds inverse
		// to the square of its load, latencies within 25 % counting as
		// equal), but its split over a 0.4 s run follows the latencies the
		// two servers showed on a busy machine; hash's, the callers' keys.
	}

	if code := s1.stop(t); code != 0 || !strings.Contains(s1.stderr.String(), "deregistered "+a1) {
		t.Errorf("serve stopped: exit %d, stderr %q; want 0 and its deregistration", code, s1.stderr)
	}
	s := loadThrough(t, svc, "--balancer", "round-robin")
	if len(s.Endpoints) != 1 || s.Endpoints[0].Addr != a2 || s.Errors != 0 {
		t.Errorf("after a server's shutdown: %+v, want every call on the other", s)
	}
	s2.stop(t)
	out.Reset()
	errOut.Reset()
	if code := Call(context.Background(), []string{svc, "Bench/NoArg"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "no server registered") {
		t.Errorf("call with no server left: exit %d, stderr %q; want 1 and no server registered", code, errOut.String())
	}

	dir := dataDir(t, e.ready)
	if code := e.stop(t); code != 0 {
		t.Errorf("lifenet-etcd stopped: exit %d, stderr %q", code, e.stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("etcd's data dir %s after it stopped: %v, want it removed", dir, err)
	}
}

// TestEtcdUnreachable: with no etcd at the address, serve --register,
// call and rpcload fail within their bounds with an error that says so.
func TestEtcdUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the registration's and the resolution's bounds (10 s each)")
	}
	leakcheck.Check(t)
	svc := "etcd://" + deadAddr(t) + "/bench"
	var out, errOut bytes.Buffer
	began := time.Now()
	if code := Serve(context.Background(), []string{"--port", "0", "--udp=false", "--register", svc}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "is etcd running there?") {
		t.Errorf("serve --register with no etcd: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := Call(context.Background(), []string{"--timeout", "2s", svc, "Bench/NoArg"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "is etcd running there?") {
		t.Errorf("call with no etcd: exit %d, stderr %q", code, errOut.String())
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("took %v", took)
	}
}
