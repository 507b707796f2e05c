package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeEtcd is the etcd address of README's cluster, which the test
// replaces with a free port.
const readmeEtcd = "127.0.0.1:2379"

// readmeCluster returns the command lines of README's "A cluster on one
// machine" (comments cut), each a command (lifenet or lifenet-etcd) and
// its arguments, and whether each ends with '&'.
func readmeCluster(t *testing.T) (lines [][]string, background []bool) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "### A cluster on one machine")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`README.md has no sh block under "### A cluster on one machine"`)
	}
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] != "lifenet" && f[0] != "lifenet-etcd" {
			t.Fatalf("README's cluster runs %q, not lifenet or lifenet-etcd", line)
		}
		bg := f[len(f)-1] == "&"
		if bg {
			f = f[:len(f)-1]
		}
		lines, background = append(lines, f), append(background, bg)
	}
	return lines, background
}

// TestReadmeCluster runs README's cluster on one machine as its lines say
// (the etcd on a free port instead of 2379): lifenet-etcd (built from
// ../lifenet-etcd) and two `lifenet serve --register` in the background,
// then the call and the rpcload through etcd, each a process of its own.
// Both servers must take calls; then the servers are stopped with SIGTERM
// (each deregisters and exits 0), then etcd (exit 0, its data dir
// removed). Every process is killed at the end whatever happens.
func TestReadmeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an etcd and a 4 s load")
	}
	deadline := time.Now().Add(90 * time.Second)
	etcdAddr := freeAddr(t)
	lines, background := readmeCluster(t)
	var bg []*child
	var servers []string // their addresses, from their READY lines
	var etcd *child
	ran := map[string]string{} // command → its stdout
	for i, line := range lines {
		for j, a := range line {
			line[j] = strings.ReplaceAll(a, readmeEtcd, etcdAddr)
		}
		args := line[1:]
		if line[0] == "lifenet-etcd" {
			if !background[i] || etcd != nil {
				t.Fatalf("README's cluster runs %q: want one lifenet-etcd, in the background", line)
			}
			etcd = startEtcdCLI(t, args...)
			etcd.waitOutput(t, etcd.stdout, "READY ", time.Until(deadline))
			bg = append(bg, etcd)
			continue
		}
		if background[i] {
			c := startCLI(t, args...)
			c.waitOutput(t, c.stdout, "READY ", time.Until(deadline))
			bg = append(bg, c)
			switch args[0] {
			case "serve":
				servers = append(servers, strings.TrimPrefix(strings.Fields(c.stdout.String())[1], "tcp://"))
			}
			continue
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		cmd := exec.CommandContext(ctx, mustExecutable(t), args...)
		cmd.Env = append(os.Environ(), asMainEnv+"=1")
		var stderr syncBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("lifenet %s: %v; stdout %q, stderr %q", strings.Join(args, " "), err, out, stderr.String())
		}
		ran[args[0]] = string(out)
	}
	if etcd == nil || len(servers) != 2 || ran["call"] == "" || ran["rpcload"] == "" {
		t.Fatalf("README's cluster: etcd %v, servers %v, ran %v; want a lifenet-etcd, two servers, a call and an rpcload", etcd != nil, servers, ran)
	}

	if ran["call"] != "3\n" {
		t.Errorf("the call through etcd printed %q, want 3", ran["call"])
	}
	s := summaryOf(t, ran["rpcload"])
	eps, _ := s["endpoints"].([]any)
	served := map[string]float64{}
	for _, e := range eps {
		m := e.(map[string]any)
		served[m["addr"].(string)] = m["attempts"].(float64)
	}
	t.Logf("rpcload through etcd: %v calls, %v errors, attempts by server %v", s["calls"], s["errors"], served)
	if s["errors"].(float64) != 0 || len(served) != 2 {
		t.Errorf("rpcload through etcd: summary %v; want no error and two endpoints", s)
	}
	for _, a := range servers {
		if served[a] == 0 {
			t.Errorf("server %s took no call of the rpcload (attempts by server: %v)", a, served)
		}
	}

	for i := len(bg) - 1; i >= 0; i-- { // the servers, then etcd
		c := bg[i]
		if code := c.signalAndWait(t, syscall.SIGTERM, 20*time.Second); code != 0 {
			t.Errorf("%q after SIGTERM: exit %d, stderr %q", c.cmd.Args[1:], code, c.stderr)
		}
		if c != etcd && !strings.Contains(c.stderr.String(), "lifenet serve: deregistered") {
			t.Errorf("%q after SIGTERM: stderr %q, want its deregistration", c.cmd.Args[1:], c.stderr)
		}
	}
	_, rest, _ := strings.Cut(etcd.stdout.String(), "data in ")
	dir, _, _ := strings.Cut(rest, ",")
	if _, err := os.Stat(dir); dir == "" || !os.IsNotExist(err) {
		t.Errorf("etcd's data dir %q after it stopped: %v, want it removed", dir, err)
	}
}

// startEtcdCLI runs lifenet-etcd with args as startCLI runs lifenet: a
// child process the test's end kills if it is still running.
func startEtcdCLI(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(buildEtcd(t), args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
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

// buildEtcd builds the lifenet-etcd command (../lifenet-etcd, a module of
// its own so that lifenet compiles no etcd server) into a temp dir and
// returns its path.
func buildEtcd(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("README's cluster needs lifenet-etcd, built here: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "lifenet-etcd")
	cmd := exec.Command(goBin, "build", "-o", exe, ".")
	cmd.Dir = filepath.Join("..", "lifenet-etcd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/lifenet-etcd: %v\n%s", err, out)
	}
	return exe
}

func mustExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
