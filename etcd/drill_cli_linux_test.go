//go:build linux

package etcd

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The drill's lifenet commands: TestDrill builds cmd/lifenet and
// cmd/lifenet-etcd into a temp dir and runs lifenet-etcd, `lifenet serve
// --register` and `lifenet rpcload --remote etcd://…` in the hosts, as
// README's "A cluster on one machine" does on one.

const (
	cliService = "bench"
	cliPort    = 5500 // lifenet serve's; the role servers listen on drillPort
	drillPort  = 5501
)

// buildLifenet builds the lifenet command (its own module,
// ../cmd/lifenet) and lifenet-etcd (../cmd/lifenet-etcd, likewise) into a
// temp dir and returns lifenet's path; lifenet-etcd is beside it.
func buildLifenet(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the drill builds the lifenet command: %v", err)
	}
	dir := t.TempDir()
	for _, name := range []string{"lifenet", "lifenet-etcd"} {
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(dir, name), ".")
		cmd.Dir = filepath.Join("..", "cmd", name)
		// In the workspace (this test runs with GOWORK=off; the command is
		// built as scripts/test.sh's vet and builds see it, so that their
		// cached packages serve).
		cmd.Env = append(os.Environ(), "GOWORK=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build cmd/%s: %v\n%s", name, err, out)
		}
	}
	return filepath.Join(dir, "lifenet")
}

// startCLIServer runs `lifenet serve` on host's address, port cliPort,
// registered in etcd as an endpoint of cliService with weight and the
// drill's TTL, pinned to cpus with taskset if cpus is not empty. It
// returns once the server printed READY (after its registration).
func (d *drill) startCLIServer(t *testing.T, host string, weight int, cpus string) *drillServer {
	t.Helper()
	n, _ := strconv.Atoi(strings.TrimPrefix(host, "s"))
	s := &drillServer{name: host, addr: fmt.Sprintf("%s%d:%d", labNet, 10+n, cliPort)}
	ready := make(chan struct{}, 1)
	argv := []string{d.lifenet, "serve", "--host", fmt.Sprintf("%s%d", labNet, 10+n), "--port", strconv.Itoa(cliPort),
		"--register", "etcd://" + d.etcdAddr + "/" + cliService, "--weight", strconv.Itoa(weight),
		"--ttl", drillTTL.String(), "--seconds", "600"}
	if cpus != "" {
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	s.p = d.lab.run(host, "lifenet serve "+host, argv, nil, false, func(_ time.Time, line string) {
		if strings.HasPrefix(line, "READY ") {
			select {
			case ready <- struct{}{}:
			default:
			}
		}
	}, func(at time.Time, line string) {
		state := ""
		switch {
		case strings.Contains(line, ": registered "):
			state = StateRegistered.String()
		case strings.Contains(line, " was lost "):
			state = StateLost.String()
		default:
			return
		}
		s.mu.Lock()
		s.states = append(s.states, drillState{State: state, At: at})
		s.mu.Unlock()
	})
	select {
	case <-ready:
	case <-s.p.exited:
		t.Fatalf("lifenet serve on %s exited: %s", host, s.p.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("lifenet serve on %s not READY in 20 s: %s", host, s.p.stderr.String())
	}
	d.cli[host] = s
	return s
}

// cliName returns the host of a lifenet serve address.
func (d *drill) cliName(addr string) string {
	for _, s := range d.cli {
		if s.addr == addr {
			return s.name
		}
	}
	return addr
}

// startEtcd runs lifenet-etcd on the etcd host with its data in
// d.etcdDir (kept across restarts) and returns when it is READY.
func (d *drill) startEtcd() time.Time {
	d.t.Helper()
	ready := make(chan time.Time, 1)
	etcdExe := filepath.Join(filepath.Dir(d.lifenet), "lifenet-etcd") // beside lifenet (buildLifenet)
	d.etcd = d.lab.run("etcd", "lifenet-etcd", []string{etcdExe, "--listen", d.etcdAddr, "--data", d.etcdDir}, nil, false,
		func(at time.Time, line string) {
			if strings.HasPrefix(line, "READY ") {
				select {
				case ready <- at:
				default:
				}
			}
		}, nil)
	select {
	case at := <-ready:
		return at
	case <-d.etcd.exited:
		d.t.Fatalf("lifenet-etcd exited: %s", d.etcd.stderr.String())
	case <-time.After(30 * time.Second):
		d.t.Fatalf("lifenet-etcd not READY in 30 s: %s", d.etcd.stderr.String())
	}
	return time.Time{}
}

// cliSummary is what the drill reads of rpcload's SUMMARY line.
type cliSummary struct {
	Calls      int64   `json:"calls"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"firstError"`
	Elapsed    float64 `json:"elapsed"`
	P99        float64 `json:"p99Us"`
	Max        float64 `json:"maxUs"`
	Balancer   string  `json:"balancer"`
	Endpoints  []struct {
		Addr        string  `json:"addr"`
		Attempts    uint64  `json:"attempts"`
		Unavailable uint64  `json:"unavailable"`
		Share       float64 `json:"share"`
	} `json:"endpoints"`
}

// share returns addr's share of the attempts, in per cent, and its
// attempts and unavailable counts.
func (s cliSummary) share(addr string) (share float64, attempts, unavailable uint64) {
	for _, e := range s.Endpoints {
		if e.Addr == addr {
			return e.Share, e.Attempts, e.Unavailable
		}
	}
	return 0, 0, 0
}

// cliEvent is one of rpcload's log lines (its cluster client's, on
// stderr, in slog's text form), with the time it was read.
type cliEvent struct {
	At     time.Time
	Msg    string // "endpoint set", "endpoint shielded", "endpoint back", "dial failed"
	Fields map[string]string
}

// loadRun is one rpcload run.
type loadRun struct {
	Window  time.Time // the measured window's start (the endpoints line + the warm-up)
	Summary cliSummary
	Events  []cliEvent
	Exit    int
	Took    time.Duration
}

// first returns the first event with msg about addr (in its addr, or in
// the list named by field, "removed" or "added") at or after since.
func (r loadRun) first(msg, field, addr string, since time.Time) (cliEvent, bool) {
	for _, e := range r.Events {
		if e.Msg != msg || e.At.Before(since) {
			continue
		}
		v := e.Fields[field]
		if v == addr || (strings.HasPrefix(v, "[") && slices.Contains(strings.Fields(strings.Trim(v, "[]")), addr)) {
			return e, true
		}
	}
	return cliEvent{}, false
}

const cliWarmup = 500 * time.Millisecond

// rpcload runs `lifenet rpcload --remote etcd://…/bench --json` in the
// client host with args (the balancer, the callers, the window's
// seconds), pinned to cpus if not empty; during, if not nil, runs once
// the measured window has begun, given its start. It returns when rpcload
// has exited.
func (d *drill) rpcload(t *testing.T, cpus string, seconds float64, during func(window time.Time), args ...string) loadRun {
	t.Helper()
	argv := append([]string{d.lifenet, "rpcload", "--remote", "etcd://" + d.etcdAddr + "/" + cliService, "--json",
		"--warmup", strconv.FormatFloat(cliWarmup.Seconds(), 'f', -1, 64), "--seconds", strconv.FormatFloat(seconds, 'f', -1, 64)}, args...)
	if cpus != "" {
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	var r loadRun
	events := make(chan cliEvent, 1024)
	dialed := make(chan time.Time, 1)
	summary := make(chan string, 1)
	began := time.Now()
	p := d.lab.run("client", "lifenet rpcload", argv, nil, false, func(_ time.Time, line string) {
		if js, ok := strings.CutPrefix(line, "SUMMARY: "); ok {
			summary <- js
		}
	}, func(at time.Time, line string) {
		if strings.HasPrefix(line, "[rpcload] etcd://") && strings.Contains(line, " endpoints, --balancer ") {
			select {
			case dialed <- at:
			default:
			}
			return
		}
		f := logfmt(line)
		if msg, ok := strings.CutPrefix(f["msg"], "cluster: "); ok {
			select {
			case events <- cliEvent{At: at, Msg: msg, Fields: f}:
			default: // a flood of log lines: the drill keeps the first 1024
			}
		}
	})
	limit := time.After(cliWarmup + time.Duration(seconds*float64(time.Second)) + 40*time.Second)
	select {
	case at := <-dialed:
		r.Window = at.Add(cliWarmup)
	case <-p.exited:
		t.Fatalf("rpcload exited before its load began: %s", p.stderr.String())
	case <-limit:
		t.Fatalf("rpcload: no endpoints in 40 s: %s", p.stderr.String())
	}
	if during != nil {
		time.Sleep(time.Until(r.Window))
		during(r.Window)
	}
	select {
	case <-p.exited:
	case <-limit:
		p.kill()
		t.Fatalf("rpcload did not end in time: %s", p.stderr.String())
	}
	r.Took = time.Since(began)
	r.Exit = p.cmd.ProcessState.ExitCode()
	close(events)
	for e := range events {
		r.Events = append(r.Events, e)
	}
	select {
	case js := <-summary:
		if err := json.Unmarshal([]byte(js), &r.Summary); err != nil {
			t.Fatalf("rpcload's SUMMARY %q: %v", js, err)
		}
	default:
		t.Fatalf("rpcload printed no SUMMARY (exit %d): %s", r.Exit, p.stderr.String())
	}
	return r
}

// logfmt splits a slog text line (key=value, values quoted when need be)
// into its fields.
func logfmt(line string) map[string]string {
	f := map[string]string{}
	for line != "" {
		line = strings.TrimLeft(line, " ")
		k, rest, ok := strings.Cut(line, "=")
		if !ok || strings.Contains(k, " ") {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		f[k] = v
		line = rest
	}
	return f
}

// cliShares is the summary's per-endpoint line for the figures: each
// lifenet serve's share, by host name.
func (d *drill) cliShares(s cliSummary) string {
	var parts []string
	for _, e := range s.Endpoints {
		parts = append(parts, fmt.Sprintf("%s %d (%.1f %%)", d.cliName(e.Addr), e.Attempts, e.Share))
	}
	return strings.Join(parts, ", ")
}
