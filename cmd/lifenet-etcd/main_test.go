package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// syncBuffer is a bytes.Buffer that etcd's goroutines write while the
// test reads it.
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

// running is run on a goroutine: its READY line, its stderr, and stop,
// which cancels its ctx and returns its exit code.
type running struct {
	ready  string
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan int
}

func (r *running) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code // for the cleanup's stop
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after its ctx ended; stderr %q", r.stderr)
		return -1
	}
}

// startRun runs lifenet-etcd with args until the test ends (or stop) and
// returns once it printed its READY line.
func startRun(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &running{stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		code := run(ctx, args, pw, r.stderr)
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
		if !strings.HasPrefix(line, "READY etcd://") {
			t.Fatalf("%q printed %q; stderr %q", args, line, r.stderr)
		}
		r.ready = strings.TrimSpace(line)
	case <-time.After(40 * time.Second):
		t.Fatalf("%q: no READY line in 40 s; stderr %q", args, r.stderr)
	}
	return r
}

// addr is the HOST:PORT of the READY line.
func (r *running) addr() string {
	return strings.TrimPrefix(strings.Fields(r.ready)[1], "etcd://")
}

// dataDir is the data dir the READY line names.
func (r *running) dataDir(t *testing.T) string {
	t.Helper()
	_, rest, ok := strings.Cut(r.ready, "data in ")
	dir, _, _ := strings.Cut(rest, ",")
	dir = strings.TrimSuffix(dir, ")")
	if !ok || dir == "" {
		t.Fatalf("no data dir in %q", r.ready)
	}
	return dir
}

// client returns an etcd client of addr, closed when the test ends.
func client(t *testing.T, addr string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestBadCommandLinesExit2InOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "localhost:2379"}, "must be an IP"},
		{[]string{"--listen", "127.0.0.1:99999"}, "PORT between 0 and 65535"},
		{[]string{"--listen", "2379"}, "want HOST:PORT"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--nope"}, "flag provided but not defined"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), c.args, &out, &errOut)
		msg := errOut.String()
		if code != exitUsage || !strings.HasPrefix(msg, "lifenet-etcd: ") || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line naming %s", c.args, code, msg, c.want)
		}
	}
}

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &errOut); code != exitOK || errOut.Len() != 0 ||
		!strings.HasPrefix(out.String(), "usage: lifenet-etcd") || !strings.Contains(out.String(), "-listen") {
		t.Errorf("-h: exit %d, stdout %q, stderr %q; want 0 and the usage with the flags", code, out.String(), errOut.String())
	}
}

// TestServesUntilStopped: on a free port it prints READY with its
// address, serves etcd's API (a put read back), and when its ctx ends
// stops with exit 0 and removes its temporary data dir.
func TestServesUntilStopped(t *testing.T) {
	leakcheck.Check(t)
	e := startRun(t, "--listen", "127.0.0.1:0")
	dir := e.dataDir(t)
	if !strings.Contains(e.ready, "removed on exit") {
		t.Errorf("READY line %q: want it to say the temporary dir is removed on exit", e.ready)
	}
	cli := client(t, e.addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put: %v", err)
	}
	if r, err := cli.Get(ctx, "k"); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Fatalf("get: %v, %v; want v", r, err)
	}
	cli.Close()
	if code := e.stop(t); code != exitOK || !strings.Contains(e.stderr.String(), "lifenet-etcd: stopping") {
		t.Errorf("stopped: exit %d, stderr %q; want 0 and that it stops", code, e.stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data dir %s after the stop: %v, want it removed", dir, err)
	}
}

// TestDataDirKept: --data DIR is kept on exit, and an etcd started again
// on it has the keys of the first (what a restart after a crash needs).
func TestDataDirKept(t *testing.T) {
	leakcheck.Check(t)
	dir := filepath.Join(t.TempDir(), "data")
	e := startRun(t, "--listen", "127.0.0.1:0", "--data", dir)
	if got := e.dataDir(t); got != dir || strings.Contains(e.ready, "removed") {
		t.Errorf("READY line %q: want data in %s, kept", e.ready, dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli := client(t, e.addr())
	if _, err := cli.Put(ctx, "kept", "yes"); err != nil {
		t.Fatalf("put: %v", err)
	}
	cli.Close()
	if code := e.stop(t); code != exitOK {
		t.Fatalf("first run stopped: exit %d, stderr %q", code, e.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "member")); err != nil {
		t.Fatalf("data dir after the stop: %v, want it kept", err)
	}
	again := startRun(t, "--listen", "127.0.0.1:0", "--data", dir)
	cli = client(t, again.addr())
	if r, err := cli.Get(ctx, "kept"); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "yes" {
		t.Errorf("get after the restart: %v, %v; want the first run's key", r, err)
	}
	cli.Close()
	if code := again.stop(t); code != exitOK {
		t.Errorf("second run stopped: exit %d, stderr %q", code, again.stderr)
	}
}

// TestPortTaken: a --listen port another socket holds fails at once with
// exit 1 and an error naming the address.
func TestPortTaken(t *testing.T) {
	leakcheck.Check(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out, errOut syncBuffer
	code := run(context.Background(), []string{"--listen", l.Addr().String()}, &out, &errOut)
	if code != exitFail || !strings.Contains(errOut.String(), l.Addr().String()) || strings.Contains(out.String(), "READY") {
		t.Errorf("on a taken port: exit %d, stdout %q, stderr %q; want 1 and the address", code, out.String(), errOut.String())
	}
}
