//go:build linux

package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
)

// Issue 45 item 1: the metrics port of `lifenet serve --metrics` held every
// connection offered to it, with no timeout on an idle keep-alive one, and
// shares the process's file limit with the RPC port: about 6,500 idle
// keep-alive connections at a limit of 6,000 left the RPC port's accepts
// failing with EMFILE and its new connections hanging unanswered. This test
// runs the command as a process under a low file limit, floods its metrics
// port past that limit, and calls the RPC port meanwhile.
const (
	cliFileLimit   = 256 // the child's RLIMIT_NOFILE (soft and hard: Go cannot raise it)
	cliMetricsCap  = 64  // --metrics-conns's default, a quarter of cliFileLimit
	cliFlood       = 600 // connections offered at once to the metrics port, past the file limit
	cliRPCClients  = 100 // RPC connections opened and called with the flood held
	cliFDsSlack    = 4   // descriptors past the cap the child may hold a moment (a refusal's, the runtime's)
	cliStopTimeout = 30 * time.Second
)

// TestMetricsPortFloodLeavesTheRPCPortServing: 600 keep-alive connections,
// then 600 silent ones, offered to the metrics port of a `lifenet serve`
// whose file limit is 256. The port never holds more than its 64
// connections' descriptors; each connection past them is answered at once
// (a 503, or the place of the keep-alive connection idle longest), none is
// left hanging; 100 new RPC connections are each answered meanwhile; and
// every method but GET and HEAD gets a 405 naming them.
func TestMetricsPortFloodLeavesTheRPCPortServing(t *testing.T) {
	leakcheck.Check(t)
	exe := buildCLI(t)
	srv := startCLIServe(t, exe, cliFileLimit)
	baseFDs := srv.fds(t)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: patience}
	defer hc.CloseIdleConnections()

	// The flood: keep-alive connections that made a request and
	// stay open, idle.
	ka := floodKeepAlive(t, srv.metrics, cliFlood)
	kaFDs := srv.fds(t)
	t.Logf("keep-alive flood: %d connections offered at once: %d answered 200, %d refused (503 or closed), %d unanswered; the child holds %d descriptors (%d before)",
		cliFlood, ka.ok, ka.refused, ka.unanswered, kaFDs, baseFDs)
	if ka.unanswered > 0 || ka.ok+ka.refused != cliFlood || ka.ok == 0 {
		t.Errorf("keep-alive flood: %d answered, %d refused, %d unanswered: want every connection answered at once (a 200 or a refusal)", ka.ok, ka.refused, ka.unanswered)
	}
	if kaFDs > baseFDs+cliMetricsCap+cliFDsSlack {
		t.Errorf("the child holds %d descriptors with the flood held, %d before: more than the metrics port's %d", kaFDs, baseFDs, cliMetricsCap)
	}
	if n := callRPC(t, srv.rpc, cliRPCClients); n != cliRPCClients {
		t.Errorf("keep-alive flood held: %d of %d new RPC connections answered", n, cliRPCClients)
	}
	st := metricsPortStatus(t, hc, srv.metrics)
	t.Logf("keep-alive flood: the metrics port holds %d of %d, refused %d and evicted %d idle connections", st.Conns, st.MaxConns, st.Refused, st.Evicted)
	if st.MaxConns != cliMetricsCap || st.Conns > cliMetricsCap || st.Evicted == 0 {
		t.Errorf("/status metrics_port %+v: want at most %d held, and idle ones evicted", st, cliMetricsCap)
	}

	// Methods other than GET and HEAD.
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		for _, path := range []string{"/metrics", "/status"} {
			req, _ := http.NewRequest(m, "http://"+srv.metrics+path, strings.NewReader("{}"))
			res, err := hc.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", m, path, err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q: want 405 and GET, HEAD", m, path, res.StatusCode, res.Header.Get("Allow"))
			}
		}
	}
	ka.close()

	// Silent connections: each holds its place until the header timeout
	// (5 s); those past the cap are refused at once.
	silent := floodSilent(t, srv.metrics, cliFlood)
	silentFDs := srv.fds(t)
	n := callRPC(t, srv.rpc, cliRPCClients)
	held, refusedNow := silent.wait(t)
	t.Logf("silent flood: %d connections offered at once: %d held (until the header timeout), %d refused at once with a 503; the child holds %d descriptors; %d of %d new RPC connections answered",
		cliFlood, held, refusedNow, silentFDs, n, cliRPCClients)
	if n != cliRPCClients {
		t.Errorf("silent flood held: %d of %d new RPC connections answered", n, cliRPCClients)
	}
	if silentFDs > baseFDs+cliMetricsCap+cliFDsSlack {
		t.Errorf("the child holds %d descriptors with the silent flood, %d before: more than the metrics port's %d", silentFDs, baseFDs, cliMetricsCap)
	}
	if held+refusedNow != cliFlood || held < cliMetricsCap || refusedNow == 0 {
		t.Errorf("silent flood: %d held, %d refused: want at least %d held, the rest refused", held, refusedNow, cliMetricsCap)
	}
	st = metricsPortStatus(t, hc, srv.metrics)
	t.Logf("after the floods: the metrics port holds %d, refused %d and evicted %d in all", st.Conns, st.Refused, st.Evicted)
	srv.stop(t)

	// A cap past a quarter of the file limit is refused at the start.
	out, err := underFileLimit(cliFileLimit, exe, "serve", "--port", "0", "--udp=false",
		"--metrics", "127.0.0.1:0", "--metrics-conns", strconv.Itoa(cliMetricsCap+1)).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), fmt.Sprintf("--metrics-conns %d: want between 1 and %d", cliMetricsCap+1, cliMetricsCap)) {
		t.Errorf("--metrics-conns %d at a file limit of %d: %v, %q: want exit 2 naming the limit", cliMetricsCap+1, cliFileLimit, err, out)
	}
}

// buildCLI builds the lifenet command (its own module in the workspace,
// cmd/lifenet) into a temp dir and returns its path.
func buildCLI(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the test builds the lifenet command: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "lifenet")
	cmd := exec.Command(goBin, "build", "-o", exe, ".")
	cmd.Dir = filepath.Join("..", "..", "..", "cmd", "lifenet")
	cmd.Env = append(os.Environ(), "GOWORK=") // the workspace, even under GOWORK=off
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/lifenet: %v\n%s", err, out)
	}
	return exe
}

// cliServe is a `lifenet serve --metrics` process.
type cliServe struct {
	cmd          *exec.Cmd
	out          *cliOutput
	done         chan struct{} // closed when it has exited
	rpc, metrics string        // HOST:PORT
}

// cliOutput is a child's stdout or stderr, written by exec's copying
// goroutine while the test reads it.
type cliOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *cliOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *cliOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// startCLIServe runs `lifenet serve --metrics` under a file limit of
// fileLimit and waits for its READY line. The test's end stops it.
func startCLIServe(t *testing.T, exe string, fileLimit int) *cliServe {
	t.Helper()
	s := &cliServe{out: &cliOutput{}, done: make(chan struct{})}
	s.cmd = underFileLimit(fileLimit, exe, "serve", "--port", "0", "--udp=false", "--metrics", "127.0.0.1:0", "--seconds", "600")
	stderr := &cliOutput{}
	s.cmd.Stdout, s.cmd.Stderr = s.out, stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("lifenet serve's stderr:\n%s", stderr)
		}
	})
	waitFor(t, "lifenet serve's READY line", func() bool {
		select {
		case <-s.done:
			t.Fatalf("lifenet serve exited: %v; stdout %q, stderr %q", s.cmd.ProcessState, s.out, stderr)
		default:
		}
		return strings.Contains(s.out.String(), "READY ")
	})
	for l := range strings.Lines(s.out.String()) {
		f := strings.Fields(l)
		switch {
		case len(f) > 1 && f[0] == "READY":
			s.rpc = strings.TrimPrefix(f[1], "tcp://")
		case len(f) > 1 && f[0] == "METRICS":
			s.metrics = strings.TrimSuffix(strings.TrimPrefix(f[1], "http://"), "/metrics")
		}
	}
	if s.rpc == "" || s.metrics == "" {
		t.Fatalf("no RPC or metrics address in %q", s.out)
	}
	return s
}

// underFileLimit is the command argv run with RLIMIT_NOFILE at fileLimit,
// soft and hard (sh's ulimit, then exec: the same process).
func underFileLimit(fileLimit int, argv ...string) *exec.Cmd {
	return exec.Command("sh", append([]string{"-c", `ulimit -n "$1" && shift && exec "$@"`, "sh", strconv.Itoa(fileLimit)}, argv...)...)
}

// fds is how many descriptors the child holds.
func (s *cliServe) fds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// stop sends SIGTERM and fails t unless the child exits 0.
func (s *cliServe) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(cliStopTimeout):
		t.Fatalf("lifenet serve still running %v after SIGTERM", cliStopTimeout)
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("lifenet serve exited %d after SIGTERM; stdout %q", code, s.out)
	}
}

// keepAliveFlood is the outcome of floodKeepAlive: ok connections got a
// 200 and are held open idle, refused got a 503 or were closed without an
// answer, unanswered had none within patience.
type keepAliveFlood struct {
	ok, refused, unanswered int
	conns                   []net.Conn
}

func (f *keepAliveFlood) close() {
	for _, c := range f.conns {
		if c != nil {
			c.Close()
		}
	}
}

// floodKeepAlive opens n connections to addr at once, each sending one
// keep-alive GET /metrics, and keeps them open; the test's end closes them.
func floodKeepAlive(t *testing.T, addr string, n int) *keepAliveFlood {
	t.Helper()
	f := &keepAliveFlood{conns: make([]net.Conn, n)}
	t.Cleanup(f.close)
	codes := make([]int, n) // 0: refused; -1: unanswered
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, patience)
			if err != nil {
				codes[i] = -1
				return
			}
			f.conns[i] = c
			c.SetDeadline(time.Now().Add(patience))
			fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				codes[i] = -1
				return
			}
			if err != nil {
				return // closed or reset: refused
			}
			if _, err := io.Copy(io.Discard, res.Body); err != nil {
				codes[i] = -1
				return
			}
			res.Body.Close()
			c.SetDeadline(time.Time{})
			codes[i] = res.StatusCode
		})
	}
	wg.Wait()
	for _, code := range codes {
		switch code {
		case 200:
			f.ok++
		case -1:
			f.unanswered++
		default:
			f.refused++
		}
	}
	return f
}

// silentFlood is n connections that sent nothing, each read by a goroutine
// to its end: a 503 (refused) or nothing (held, then closed by the
// server's header timeout).
type silentFlood struct {
	wg               sync.WaitGroup
	refused, held    atomic.Int64
	hanging, dialErr atomic.Int64
}

// floodSilent opens n connections to addr at once, sending nothing.
func floodSilent(t *testing.T, addr string, n int) *silentFlood {
	t.Helper()
	f := &silentFlood{}
	dialed := make(chan struct{}, n)
	for range n {
		f.wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, patience)
			dialed <- struct{}{}
			if err != nil {
				f.dialErr.Add(1)
				return
			}
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(patience))
			b, err := io.ReadAll(c)
			switch ne, ok := err.(net.Error); {
			case ok && ne.Timeout():
				f.hanging.Add(1)
			case bytes.HasPrefix(b, []byte("HTTP/1.1 503 ")):
				f.refused.Add(1)
			default: // EOF (the header timeout) or a reset with nothing read
				f.held.Add(1)
			}
		})
	}
	for range n {
		recv(t, dialed, "a silent connection dialed")
	}
	return f
}

// wait waits for every silent connection to end and returns how many were
// held and how many refused; it fails t for any still open after patience
// or not dialed.
func (f *silentFlood) wait(t *testing.T) (held, refused int) {
	t.Helper()
	f.wg.Wait()
	if h, d := f.hanging.Load(), f.dialErr.Load(); h > 0 || d > 0 {
		t.Errorf("silent flood: %d connections still open after %v, %d not dialed", h, patience, d)
	}
	return int(f.held.Load()), int(f.refused.Load())
}

// callRPC opens n RPC connections to addr at once, calls Bench/NoArg on
// each, and returns how many answered 42.
func callRPC(t *testing.T, addr string, n int) int {
	t.Helper()
	var answered atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			cl, err := rpc.Dial(ctx, addr, rpc.ClientConfig{})
			if err != nil {
				return
			}
			defer cl.Close()
			var r int32
			if err := cl.Invoke(ctx, "Bench/NoArg", nil, &r); err == nil && r == 42 {
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	return int(answered.Load())
}

// metricsPort is /status's metrics_port object.
type metricsPort struct {
	Conns    int    `json:"conns"`
	MaxConns int    `json:"conns_max"`
	Refused  uint64 `json:"refused"`
	Evicted  uint64 `json:"evicted"`
}

// metricsPortStatus GETs /status and returns its metrics_port.
func metricsPortStatus(t *testing.T, hc *http.Client, addr string) metricsPort {
	t.Helper()
	res, err := hc.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st struct {
		MetricsPort *metricsPort `json:"metrics_port"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.StatusCode != 200 || st.MetricsPort == nil {
		t.Fatalf("GET /status: %d, %v, metrics_port %v", res.StatusCode, err, st.MetricsPort)
	}
	return *st.MetricsPort
}
