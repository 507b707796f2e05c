package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/fleet"
	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
)

// Bad command lines exit 2 with one line naming the flag.
func TestFleetBadFlagsExit2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--conns", "5"}, "--remote HOST:PORT is required"},
		{[]string{"--remote", "127.0.0.1:1", "--conns", "0"}, "--conns 0: want between 1 and"},
		{[]string{"--remote", "127.0.0.1:1", "--conns", "2000000"}, "--conns 2000000"},
		{[]string{"--remote", "127.0.0.1:1", "--sources", "127.0.0.9-127.0.0.1"}, "--sources"},
		{[]string{"--remote", "127.0.0.1:1", "--proto", "http"}, "--proto"},
		{[]string{"--remote", "127.0.0.1:1", "--heartbeat", "0s"}, "--heartbeat"},
		{[]string{"--remote", "127.0.0.1:1", "--ramp", "fast"}, "--ramp"},
		{[]string{"--remote", "127.0.0.1:1", "--burst", "1.5MB"}, "--burst"},
		{[]string{"--remote", "127.0.0.1:1", "--burst", "1GiB"}, "--burst"},
		{[]string{"--remote", "127.0.0.1:1", "--server-pid", "abc"}, "--server-pid"},
		{[]string{"--remote", "127.0.0.1:1", "--action", ""}, "--action"},
		{[]string{"--remote", "nowhere.invalid:1"}, "Remote"},
		{[]string{"--remote", "127.0.0.1:1", "extra"}, "extra"},
		{[]string{"--bogus"}, "bogus"},
	}
	if lim := fleet.RaiseFileLimit(); lim > 0 && lim <= fleetMaxConns {
		cases = append(cases, struct {
			args []string
			want string
		}{[]string{"--remote", "127.0.0.1:1", "--conns", itoa(int(lim))}, "open-file limit"})
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"fleet"}, c.args...), &out, &errOut)
		if msg := errOut.String(); code != 2 || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line with %q", c.args, code, msg, c.want)
		}
	}
}

// More connections than one source's ports: exit 2, naming --sources.
func TestFleetPortsPerSource(t *testing.T) {
	t.Parallel()
	ports, _ := fleet.LocalPorts()
	if ports == 0 {
		t.Skip("the ephemeral port range is not readable here")
	}
	err := fleetLimits(ports+1, 1)
	if lim := fleet.RaiseFileLimit(); lim > 0 && uint64(ports+1)+fleet.FileSlack > lim {
		t.Skipf("the open-file limit %d is below the ports of one source (%d)", lim, ports)
	}
	if err == nil || !strings.Contains(err.Error(), "--sources") {
		t.Fatalf("%d connections over one source: %v, want an error naming --sources", ports+1, err)
	}
	if err := fleetLimits(ports+1, 2); err != nil {
		t.Fatalf("over two sources: %v", err)
	}
}

// lifenet fleet against an rpc server: exit 0, the report and its JSON.
func TestFleetCommandRuns(t *testing.T) {
	leakcheck.Check(t)
	srv, err := rpc.NewServer(rpc.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := rpcbench.RegisterBench(srv, true); err != nil {
		t.Fatal(err)
	}
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "r.json")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"fleet", "--remote", a.String(), "--conns", "40", "--sources", "127.0.0.1,127.0.0.2",
		"--heartbeat", "100ms", "--duration", "600ms", "--idle", "200ms", "--burst", "1KiB", "--server-pid", "self", "--json", file}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "--server-pid") {
		t.Fatalf("--server-pid self: exit %d, %q; want 2", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	code = run(context.Background(), []string{"fleet", "--remote", a.String(), "--conns", "40", "--sources", "127.0.0.1,127.0.0.2",
		"--heartbeat", "100ms", "--duration", "600ms", "--idle", "200ms", "--burst", "1KiB", "--server-pid", itoa(os.Getpid()), "--json", file}, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "held 40 at the end (40 ever), refused 0, failed 0, lost 0") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out.String(), errOut.String())
	}
	var r fleet.Report
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Held != 40 || r.Server == nil || r.Bursts != 40 {
		t.Fatalf("--json: %v, %s", err, b)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
