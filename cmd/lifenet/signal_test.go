package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// The signal tests run this test binary as the CLI (TestMain calls main
// when asked to), so that a signal reaches main's handling as it would a
// built lifenet's.
const asMainEnv = "LIFENET_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer a child's output goroutine writes while the
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

// child is a lifenet process started by a test.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{} // closed when it has exited
	code           int
}

// startCLI runs `lifenet args…` as a child process; the test's end kills
// it if it is still running.
func startCLI(t *testing.T, args ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(exe, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), asMainEnv+"=1")
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.cmd.Wait()
		c.code = c.cmd.ProcessState.ExitCode()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// waitOutput waits until the child's out contains want.
func (c *child) waitOutput(t *testing.T, out *syncBuffer, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(out.String(), want) {
		select {
		case <-c.done:
			t.Fatalf("exited %d before printing %q; stdout %q, stderr %q", c.code, want, c.stdout, c.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %v; stdout %q, stderr %q", want, timeout, c.stdout, c.stderr)
		}
	}
}

// signalAndWait sends sig and returns the exit code, failing the test if
// the child has not exited within timeout.
func (c *child) signalAndWait(t *testing.T, sig os.Signal, timeout time.Duration) int {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
		return c.code
	case <-time.After(timeout):
		t.Fatalf("still running %v after %v; stdout %q, stderr %q", timeout, sig, c.stdout, c.stderr)
		return -1
	}
}

// summaryOf decodes the SUMMARY line of out.
func summaryOf(t *testing.T, out string) map[string]any {
	t.Helper()
	for l := range strings.Lines(out) {
		if js, ok := strings.CutPrefix(strings.TrimSpace(l), "SUMMARY: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(js), &m); err != nil {
				t.Fatalf("SUMMARY %s: %v", js, err)
			}
			return m
		}
	}
	t.Fatalf("no SUMMARY line in %q", out)
	return nil
}

// TestRPCLoadInterrupted: rpcload stopped by a signal during its window
// reports the time that ran (not the configured window), a rate over that
// time, says it was interrupted, and exits 1 (issue 25 item 12).
func TestRPCLoadInterrupted(t *testing.T) {
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			c := startCLI(t, "rpcload", "--seconds", "60", "--warmup", "0", "--conns", "1")
			c.waitOutput(t, c.stderr, "[rpcload] measuring", 10*time.Second)
			start := time.Now()
			code := c.signalAndWait(t, sig, 10*time.Second)
			ran := time.Since(start)
			out := c.stdout.String()
			if code != 1 || !strings.Contains(out, "interrupted : after") || !strings.Contains(c.stderr.String(), "interrupted after") {
				t.Fatalf("exit %d; stdout %q; stderr %q: want 1 and the interrupt reported", code, out, c.stderr)
			}
			s := summaryOf(t, out)
			elapsed, calls, rate := s["elapsed"].(float64), s["calls"].(float64), s["callsPerSec"].(float64)
			if s["interrupted"] != true || elapsed < 0.5 || elapsed > 30 || calls == 0 {
				t.Errorf("summary %v: want interrupted, an elapsed time of about a second, calls", s)
			}
			if want := calls / elapsed; rate < want*0.99 || rate > want*1.01 {
				t.Errorf("%g calls/s, want calls/elapsed = %g", rate, want)
			}
			t.Logf("interrupted after %.2f s (stopped %v after the signal): %g calls/s", elapsed, ran.Round(time.Millisecond), rate)
		})
	}
}

// TestLoadInterrupted: `load` stopped by a signal reports the time that
// ran, does not count the messages in flight as missing, says it was
// interrupted, and exits 1 (issue 25 item 12).
func TestLoadInterrupted(t *testing.T) {
	for _, mode := range []string{"pipeline", "roundtrip"} {
		t.Run(mode, func(t *testing.T) {
			c := startCLI(t, "load", "--mode", mode, "--seconds", "60", "--warmup", "0", "--clients", "2", "--size", "256")
			c.waitOutput(t, c.stderr, "[client] 1/60 s", 15*time.Second)
			code := c.signalAndWait(t, syscall.SIGTERM, 20*time.Second)
			out := c.stdout.String()
			if code != 1 || !strings.Contains(out, "interrupted : after") || !strings.Contains(c.stderr.String(), "interrupted after") {
				t.Fatalf("exit %d; stdout %q; stderr %q: want 1 and the interrupt reported", code, out, c.stderr)
			}
			if strings.Contains(out, "messages short") {
				t.Errorf("messages in flight at the interrupt reported as missing:\n%s", out)
			}
			s := summaryOf(t, out)
			if s["interrupted"] != true || s["elapsed"].(float64) < 0.5 || s["elapsed"].(float64) > 30 || s["msgsPerSec"].(float64) <= 0 || s["integrityDiff"] != nil {
				t.Errorf("summary %v: want interrupted, about a second elapsed, a rate, no integrity diff", s)
			}
		})
	}
}

// serveCLI starts `lifenet serve` on a free port and returns it and the
// address it listens on.
func serveCLI(t *testing.T, args ...string) (*child, string) {
	t.Helper()
	c := startCLI(t, append([]string{"serve", "--port", "0", "--udp=false"}, args...)...)
	c.waitOutput(t, c.stdout, "\n", 15*time.Second)
	f := strings.Fields(c.stdout.String())
	if len(f) < 2 || f[0] != "READY" {
		t.Fatalf("serve printed %q", c.stdout)
	}
	return c, strings.TrimPrefix(f[1], "tcp://")
}

// TestServeShutsDownGracefully: serve on SIGTERM or SIGINT lets the call
// in progress finish and exits 0; past --grace it cuts the call short and
// exits 1 (issue 25 item 13).
func TestServeShutsDownGracefully(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			c, addr := serveCLI(t, "--grace", "10s")
			ctx := context.Background()
			cl, err := rpc.Dial(ctx, addr, rpc.ClientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if _, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil {
				t.Fatal(err)
			}
			type result struct {
				ms  int
				err error
			}
			slow := make(chan result, 1)
			go func() {
				ms, err := rpc.Call[int](ctx, cl, "Bench/Sleep", map[string]int{"ms": 1500})
				slow <- result{ms, err}
			}()
			time.Sleep(300 * time.Millisecond) // the call is in the server's hands
			start := time.Now()
			if code := c.signalAndWait(t, sig, 15*time.Second); code != 0 {
				t.Errorf("exit %d, stderr %q: want 0", code, c.stderr)
			}
			if took := time.Since(start); took < time.Second {
				t.Errorf("exited %v after the signal: before the call in progress (1.2 s left) finished", took)
			}
			if r := <-slow; r.err != nil || r.ms != 1500 {
				t.Errorf("the call in progress: %d, %v; want 1500 and no error", r.ms, r.err)
			}
		})
	}
	t.Run("grace over", func(t *testing.T) {
		c, addr := serveCLI(t, "--grace", "300ms")
		ctx := context.Background()
		cl, err := rpc.Dial(ctx, addr, rpc.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		slow := make(chan error, 1)
		go func() {
			_, err := rpc.Call[int](ctx, cl, "Bench/Sleep", map[string]int{"ms": 20000})
			slow <- err
		}()
		time.Sleep(300 * time.Millisecond)
		if code := c.signalAndWait(t, syscall.SIGTERM, 10*time.Second); code != 1 || !strings.Contains(c.stderr.String(), "--grace 300ms") {
			t.Errorf("exit %d, stderr %q: want 1 and the grace period named", code, c.stderr)
		}
		select {
		case err := <-slow:
			if err == nil {
				t.Error("the call cut short succeeded")
			}
		case <-time.After(10 * time.Second):
			t.Error("the call cut short did not end with the server")
		}
	})
	t.Run("netrpc", func(t *testing.T) {
		c, _ := serveCLI(t, "--impl", "netrpc")
		if code := c.signalAndWait(t, syscall.SIGTERM, 10*time.Second); code != 0 {
			t.Errorf("exit %d, stderr %q: want 0", code, c.stderr)
		}
	})
}
