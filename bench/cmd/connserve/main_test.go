package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// runMainEnv, when set, makes the test binary run connserve's main with its
// arguments: the tests start real server processes this way.
const runMainEnv = "CONNSERVE_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// engineOS reports whether impl runs on this OS.
func engineOS(impl string) bool { return impl == "std" || runtime.GOOS == "linux" }

// reusePortOS reports whether --reuseport works on this OS.
func reusePortOS() bool {
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
		return true
	}
	return false
}

// echoConns opens n connections to addr, holds them all open, then on
// each writes a payload of its own and reads exactly that payload back.
func echoConns(t *testing.T, addr string, n int) {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial %d of %d: %v", i+1, n, err)
		}
		conns = append(conns, c)
	}
	got := make([]byte, 64)
	for i, c := range conns {
		want := fmt.Appendf(nil, "connection %06d %s", i, strings.Repeat("x", 40))
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write(want); err != nil {
			t.Fatalf("connection %d: write: %v", i, err)
		}
		if _, err := io.ReadFull(c, got[:len(want)]); err != nil {
			t.Fatalf("connection %d: read: %v", i, err)
		}
		if !bytes.Equal(got[:len(want)], want) {
			t.Fatalf("connection %d: echoed %q, want %q", i, got[:len(want)], want)
		}
	}
}

// echoLarge writes size patterned bytes on one connection while reading
// them back, and checks every byte came back in order.
func echoLarge(t *testing.T, addr string, size int) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i/251)
	}
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(want)
		werr <- err
	}()
	got := make([]byte, size)
	_, rerr := io.ReadFull(c, got)
	if err := <-werr; err != nil {
		t.Fatalf("write: %v", err)
	}
	if rerr != nil {
		t.Fatalf("read: %v", rerr)
	}
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("echoed byte %d is %d, want %d", i, got[i], want[i])
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestEcho serves each implementation in this process, holds 1,000
// connections open at once, checks each echoes its own bytes and that 4 MiB
// on one connection come back whole, then stops the server and checks it
// returns nil.
func TestEcho(t *testing.T) {
	for _, impl := range []string{"std", "gnet", "nbio", "lifenet"} {
		t.Run(impl, func(t *testing.T) {
			if !engineOS(impl) {
				t.Skipf("%s runs on Linux only", impl)
			}
			leakcheck.Check(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			addrc := make(chan string, 1)
			errc := make(chan error, 1)
			go func() {
				errc <- servers[impl](ctx, config{Impl: impl, Host: "127.0.0.1"}, func(a string) { addrc <- a })
			}()
			var addr string
			select {
			case addr = <-addrc:
			case err := <-errc:
				t.Fatalf("serve: %v", err)
			}
			echoConns(t, addr, 1000)
			echoLarge(t, addr, 4<<20)
			cancel()
			select {
			case err := <-errc:
				if err != nil {
					t.Fatalf("serve returned %v after its context ended", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not return within 30 s of its context ending")
			}
		})
	}
}

// TestUnsupported checks that where an engine does not run it fails with
// errUnsupported.
func TestUnsupported(t *testing.T) {
	if runtime.GOOS == "linux" {
		t.Skip("gnet and nbio run here")
	}
	for _, impl := range []string{"gnet", "nbio"} {
		if err := servers[impl](context.Background(), config{}, func(string) {}); !errors.Is(err, errUnsupported) {
			t.Errorf("%s: %v, want errUnsupported", impl, err)
		}
	}
}

// TestFlags checks bad flags exit 2 with one line naming the flag.
func TestFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--impl", "epoll"}, "--impl"},
		{[]string{"--port", "70000"}, "--port"},
		{[]string{"--seconds", "-1"}, "--seconds"},
		{[]string{"--seconds", "NaN"}, "--seconds"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--bogus"}, "bogus"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("%v: stdout %q, stderr %q; want %q on stderr only", tc.args, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// proc is a connserve process started by the test.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	stderr bytes.Buffer
	done   chan error // Wait's result
}

// start runs connserve with args in a process of its own and waits for its
// READY line; if it exits first, it returns the process with addr "".
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(os.Args[0], args...), done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		first := ""
		if sc.Scan() {
			first = sc.Text()
		}
		line <- first
		_, _ = io.Copy(io.Discard, out)
		p.done <- p.cmd.Wait()
	}()
	select {
	case l := <-line:
		if l == "" {
			return p
		}
		var pid int
		if _, err := fmt.Sscanf(l, "READY tcp://%s pid=%d", &p.addr, &pid); err != nil || pid != p.cmd.Process.Pid {
			t.Fatalf("first line %q: want READY tcp://ADDR pid=%d", l, p.cmd.Process.Pid)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("connserve %v: no READY in 60 s; stderr: %s", args, p.stderr.String())
	}
	return p
}

// wait waits (60 s at most) for p to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		p.done <- nil // for the cleanup
	case <-time.After(60 * time.Second):
		t.Fatalf("connserve did not exit in 60 s; stderr: %s", p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// TestReusePort runs each implementation as real processes: a second
// process without --reuseport cannot take a port the first holds; with it,
// it can, and once the first exits on SIGTERM (code 0) the second serves
// new connections on the same port alone.
func TestReusePort(t *testing.T) {
	if !reusePortOS() {
		t.Skip("no SO_REUSEPORT here")
	}
	for _, impl := range []string{"std", "gnet", "nbio", "lifenet"} {
		t.Run(impl, func(t *testing.T) {
			t.Parallel()
			if !engineOS(impl) {
				t.Skipf("%s runs on Linux only", impl)
			}
			a := start(t, "--impl", impl, "--reuseport", "--seconds", "120")
			if a.addr == "" {
				t.Fatalf("first process exited: %s", a.stderr.String())
			}
			_, port, _ := net.SplitHostPort(a.addr)
			b := start(t, "--impl", impl, "--port", port, "--seconds", "120")
			if b.addr != "" {
				t.Fatalf("a second process without --reuseport took port %s", port)
			}
			if code := b.wait(t); code != 1 {
				t.Fatalf("the second process without --reuseport exited %d, want 1; stderr: %s", code, b.stderr.String())
			}
			c := start(t, "--impl", impl, "--reuseport", "--port", port, "--seconds", "120")
			if c.addr != a.addr {
				t.Fatalf("with --reuseport the second process reports %q (stderr %s), want %q", c.addr, c.stderr.String(), a.addr)
			}
			echoConns(t, a.addr, 100)
			if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := a.wait(t); code != 0 {
				t.Fatalf("SIGTERM: exit %d, want 0; stderr: %s", code, a.stderr.String())
			}
			echoConns(t, c.addr, 100)
			if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := c.wait(t); code != 0 {
				t.Fatalf("SIGTERM: exit %d, want 0; stderr: %s", code, c.stderr.String())
			}
		})
	}
}

// TestSeconds checks a server exits 0 by itself once --seconds pass.
func TestSeconds(t *testing.T) {
	t.Parallel()
	p := start(t, "--seconds", "0.5")
	if p.addr == "" {
		t.Fatalf("exited before READY: %s", p.stderr.String())
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d, want 0; stderr: %s", code, p.stderr.String())
	}
}
