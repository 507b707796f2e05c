//go:build unix

package etcd

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A server registers from a child process, which is then killed with
// SIGKILL, so nothing deregisters it: the resolver drops it once the
// lease expires, within the TTL plus etcd's 500 ms expiry check and the
// debounce (about 2.4 s with a 2 s TTL; the test allows TTL + 2 s, for a
// loaded machine).
func TestLeaseExpiresAfterSIGKILL(t *testing.T) {
	checkLeaks(t)
	srv := startEtcd(t)
	cli := newClient(t, srv.endpoint())
	rec := watchResolver(t, newResolver(t, cli, "calc", ResolverConfig{}))
	rec.await(t, 5*time.Second)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s calc 127.0.0.1:6001 %d", childEnv, srv.endpoint(), int(ttl/time.Second)))
	var stderr logBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "registered" {
			t.Fatalf("child said %q; stderr: %s", l, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("child did not register in 20 s; stderr: %s", stderr.String())
	}
	rec.await(t, 5*time.Second, "127.0.0.1:6001")

	killed := time.Now()
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	gone := rec.await(t, ttl+5*time.Second)
	took := gone.Sub(killed)
	t.Logf("SIGKILLed server dropped %v after the kill (TTL %v)", took.Round(time.Millisecond), ttl)
	if limit := ttl + 2*time.Second; took > limit {
		t.Errorf("dropped %v after the kill, want within %v", took, limit)
	}
}
