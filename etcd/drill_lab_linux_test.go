//go:build linux

package etcd

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lab is the drill's network: one "switch" namespace holding a Linux
// bridge, and one namespace per host, each joined to the bridge by a veth
// pair (eth0 in the host, p-HOST in the switch). Every namespace is named
// with the run's prefix (lnd<pid>-); the interfaces are made directly in
// those namespaces (never in the root one), so deleting the namespaces
// deletes every interface the drill made. Addresses are 198.18.0.0/24,
// in the benchmarking range 198.18.0.0/15.
type lab struct {
	t      *testing.T
	prefix string // "lnd<pid>"
	exe    string // the test binary, re-run in the hosts
	sw     string // the switch namespace
}

const labNet = "198.18.0." // hosts are labNet + n, /24

// newLab skips t unless it runs as root with ip(8) at hand, sweeps
// leftovers of this run's prefix, registers the sweep as a cleanup (before
// anything is made) and makes the switch.
func newLab(t *testing.T) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the drill makes network namespaces: root only")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("the drill needs ip(8) (iproute2): %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, prefix: fmt.Sprintf("lnd%d", os.Getpid()), exe: exe}
	l.sw = l.ns("sw")
	l.sweep()
	t.Cleanup(l.sweep)
	l.sweepDead()
	l.ip("netns", "add", l.sw)
	l.ip("-n", l.sw, "link", "add", "name", "br0", "type", "bridge")
	l.ip("-n", l.sw, "link", "set", "br0", "up")
	return l
}

func (l *lab) ns(host string) string { return l.prefix + "-" + host }

// port is the switch side of host's veth.
func (l *lab) port(host string) string { return "p-" + host }

// addHost makes host's namespace with address labNet+n on eth0, joined to
// the bridge.
func (l *lab) addHost(host string, n int) string {
	l.t.Helper()
	ns := l.ns(host)
	l.ip("netns", "add", ns)
	l.ip("-n", l.sw, "link", "add", "name", l.port(host), "type", "veth", "peer", "name", "eth0", "netns", ns)
	l.ip("-n", l.sw, "link", "set", l.port(host), "master", "br0")
	l.ip("-n", l.sw, "link", "set", l.port(host), "up")
	addr := fmt.Sprintf("%s%d", labNet, n)
	l.ip("-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
	l.ip("-n", ns, "link", "set", "eth0", "up")
	l.ip("-n", ns, "link", "set", "lo", "up")
	return addr
}

// link sets host's switch port up or down: a partition of that host.
func (l *lab) link(host string, up bool) {
	l.t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	l.ip("-n", l.sw, "link", "set", l.port(host), state)
}

func (l *lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// names lists the namespaces whose names start with prefix.
func (l *lab) names(prefix string) []string {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		l.t.Logf("ip netns list: %v", err)
		return nil
	}
	var ns []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			ns = append(ns, f[0])
		}
	}
	return ns
}

// sweepDead deletes the namespaces of earlier runs whose process is gone
// (a run killed, or panicked by -timeout, skips its cleanups; its
// children die with it, by Pdeathsig): lnd<pid>-… with no process <pid>.
// Those of live processes (a drill running beside this one) are left.
func (l *lab) sweepDead() {
	var live []string
	for _, n := range l.names("lnd") {
		pid, _, ok := strings.Cut(strings.TrimPrefix(n, "lnd"), "-")
		p, err := strconv.Atoi(pid)
		if !ok || err != nil || p == os.Getpid() {
			continue
		}
		if err := syscall.Kill(p, 0); err != syscall.ESRCH {
			live = append(live, n)
			continue
		}
		if out, err := exec.Command("ip", "netns", "del", n).CombinedOutput(); err != nil {
			l.t.Logf("ip netns del %s (left by process %d, gone): %v: %s", n, p, err, bytes.TrimSpace(out))
		} else {
			l.t.Logf("deleted %s, left by process %d (gone)", n, p)
		}
	}
	if len(live) > 0 {
		l.t.Logf("namespaces of other live runs left alone: %v", live)
	}
}

// sweep deletes every namespace of this run's prefix, the switch last
// (deleting a namespace deletes its ends of the veths, and so the pairs).
// It runs before anything is made and as the test's last cleanup, after
// the processes in the hosts were killed.
func (l *lab) sweep() {
	ns := l.names(l.prefix + "-")
	slices.SortFunc(ns, func(a, b string) int {
		if (a == l.sw) != (b == l.sw) {
			if a == l.sw {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	for _, n := range ns {
		if out, err := exec.Command("ip", "netns", "del", n).CombinedOutput(); err != nil {
			l.t.Errorf("ip netns del %s: %v: %s", n, err, bytes.TrimSpace(out))
		}
	}
	if left := l.names(l.prefix + "-"); len(left) > 0 {
		l.t.Errorf("namespaces left after the sweep: %v", left)
	}
}

// proc is a process the drill started in a host: the test binary run
// again as one of the roles of TestDrillHelper, or the lifenet command.
type proc struct {
	name     string
	cmd      *exec.Cmd
	stdin    io.WriteCloser // nil for a lifenet command
	stderr   *logBuffer
	exited   chan struct{}
	mu       sync.Mutex
	killed   bool
	killedAt time.Time
}

// start runs role in host's namespace with env; onLine gets each line the
// process writes to stdout, with the time it was read.
func (l *lab) start(host, name, role string, onLine func(at time.Time, line string), env ...string) *proc {
	l.t.Helper()
	return l.run(host, name, []string{l.exe, "-test.run=^TestDrillHelper$"}, append([]string{drillRoleEnv + "=" + role}, env...), true, onLine, nil)
}

// run runs argv in host's namespace with env added, a pipe on its stdin
// if stdin; onOut and onErr (either may be nil) get each line the process
// writes to stdout and stderr, with the time it was read; stderr is kept
// in proc.stderr as well. The process is killed (by PID) in a cleanup,
// and gets SIGKILL should the test process die first (Pdeathsig).
func (l *lab) run(host, name string, argv, env []string, stdin bool, onOut, onErr func(at time.Time, line string)) *proc {
	l.t.Helper()
	// ip netns exec execs the command in place (and so does taskset): the
	// PID is the command's.
	cmd := exec.Command("ip", append([]string{"netns", "exec", l.ns(host)}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &proc{name: name, cmd: cmd, stderr: &logBuffer{}, exited: make(chan struct{})}
	var err error
	if stdin {
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			l.t.Fatal(err)
		}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		l.t.Fatal(err)
	}
	errp, err := cmd.StderrPipe()
	if err != nil {
		l.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		l.t.Fatalf("start %s: %v", name, err)
	}
	l.t.Cleanup(func() { p.kill() })
	var readers sync.WaitGroup
	readers.Go(func() { readLines(out, nil, onOut) })
	readers.Go(func() { readLines(errp, p.stderr, onErr) })
	go func() {
		readers.Wait()
		cmd.Wait()
		close(p.exited)
	}()
	return p
}

// readLines calls onLine (if not nil) with each line of r and the time it
// was read, and copies the lines to keep (if not nil).
func readLines(r io.Reader, keep io.Writer, onLine func(time.Time, string)) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 64<<20)
	for s.Scan() {
		at := time.Now()
		if keep != nil {
			keep.Write(append(s.Bytes(), '\n'))
		}
		if onLine != nil {
			onLine(at, s.Text())
		}
	}
}

// kill sends SIGKILL to the process by its PID and waits for it; it
// returns the time the signal went.
func (p *proc) kill() time.Time {
	at := p.signal()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
	return at
}

// signal sends SIGKILL to the process by its PID (once) and returns the
// time it went, without waiting for the process to end.
func (p *proc) signal() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.killed {
		p.killed = true
		p.killedAt = time.Now()
		syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	}
	return p.killedAt
}

func (p *proc) send(line []byte) error {
	_, err := p.stdin.Write(append(line, '\n'))
	return err
}
