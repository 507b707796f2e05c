package main

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

func TestCommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"help"}, 0, "usage"},
		{[]string{"load", "--clients", "-3"}, 2, "--clients"},
		{[]string{"load", "--mode", "nope"}, 2, "--mode"},
		{[]string{"load", "--recvmode", "x"}, 2, "--recvmode"},
		{[]string{"load", "--codec", "x"}, 2, "--codec"},
		{[]string{"load", "--impl", "x"}, 2, "--impl"},
		{[]string{"load", "--size", "0"}, 2, "--size"},
		{[]string{"load", "--warmup", "-1"}, 2, "--warmup"},
		{[]string{"load", "--host", "nowhere"}, 2, "--host"},
		{[]string{"load", "extra"}, 2, "extra"},
		{[]string{"matrix", "--seconds", "0"}, 2, "--seconds"},
		{[]string{"matrix", "--rounds", "0"}, 2, "--rounds"},
		{[]string{"matrix", "--warmup", "-1"}, 2, "--warmup"},
		{[]string{"matrix", "--only", "("}, 2, "--only"},
		{[]string{"matrix", "extra"}, 2, "extra"},
		{[]string{"serve", "--host", "nowhere"}, 2, "--host"},
		{[]string{"rpcload", "--conns", "0"}, 2, "--conns"},
		{[]string{"rpcload", "--timeout", "-1s"}, 2, "--timeout -1s: want between"},
		{[]string{"soak", "--conns", "1"}, 2, "--conns"},
		{[]string{"soak", "--minutes", "1", "--seconds", "5"}, 2, "exclude"},
		{[]string{"version", "extra"}, 2, "extra"},
		{[]string{"version"}, 0, "lifenet "},
		{[]string{"serve", "extra"}, 2, "extra"},
		{[]string{"rpcload", "extra"}, 2, "extra"},
		{[]string{"help", "bogus"}, 2, `unknown command "bogus"`},
		// Usage errors that exited 1 (issue 25 item 14).
		{[]string{"rpcload", "--impl", "netrpc"}, 2, "--remote"},
		{[]string{"rpcload", "--impl", "netrpc", "--remote", "nowhere"}, 2, "--remote"},
		{[]string{"rpcload", "--remote", "ftp://127.0.0.1:1"}, 2, "--remote"},
		{[]string{"call", "ftp://127.0.0.1:1", "A/B"}, 2, "unsupported server address"},
		{[]string{"call", "--list", "127.0.0.1:1", "A/B"}, 2, "--list"},
		{[]string{"serve", "--port", "0", "--traces", "0.5"}, 2, "--traces needs --metrics"},
		{[]string{"serve", "--port", "0", "--metrics", "127.0.0.1:0", "--traces", "2"}, 2, "--traces 2: want a ratio from 0 to 1"},
		{[]string{"serve", "--port", "0", "--metrics", "127.0.0.1:0", "--traces", "NaN"}, 2, "--traces NaN: want a ratio from 0 to 1"},
		{[]string{"serve", "--port", "0", "--metrics-conns", "8"}, 2, "--metrics-conns needs --metrics"},
		{[]string{"serve", "--port", "0", "--metrics", "127.0.0.1:abc"}, 2, `--metrics "127.0.0.1:abc": want HOST:PORT with a port from 0 to 65535`},
		{[]string{"serve", "--port", "0", "--metrics", "127.0.0.1:65536"}, 2, "--metrics"},
		{[]string{"serve", "--port", "0", "--metrics", "127.0.0.1"}, 2, `--metrics "127.0.0.1": want HOST:PORT`},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), c.args, &out, &errOut)
		if code != c.code || !strings.Contains(out.String()+errOut.String(), c.want) {
			t.Errorf("%q: exit %d, output %q", c.args, code, out.String()+errOut.String())
		}
		if code == 2 && len(c.args) > 0 && strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%q: stderr %q: want one line", c.args, errOut.String())
		}
	}
}

func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/lifenet/lifenet/cmd/lifenet", Version: "v0.2.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := version(bi, true)
	for _, want := range []string{"lifenet v0.2.0\n", "commit  0123abc+dirty (2026-01-02T03:04:05Z)\n", "go      go1.26.0 "} {
		if !strings.Contains(got, want) {
			t.Errorf("version lacks %q:\n%s", want, got)
		}
	}
	if got := version(nil, false); !strings.HasPrefix(got, "lifenet (devel)\ncommit  (unknown)\n") || !strings.Contains(got, runtime.Version()) {
		t.Errorf("without build info:\n%s", got)
	}
	buildTime = "2026-02-03T00:00:00Z"
	defer func() { buildTime = "" }()
	if got := version(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true); !strings.Contains(got, "lifenet (devel)\n") || !strings.Contains(got, "built   2026-02-03T00:00:00Z\n") {
		t.Errorf("devel build:\n%s", got)
	}
}

// TestHelp: every spelling of help, and every command's --help, -help and
// -h, print the usage on stdout and exit 0; the usage names the arguments
// a command takes, no flag's help is garbled by a back-quoted word (flag
// takes one for the argument's name) (issue 25 item 14), and every flag is
// listed with two dashes, as the help texts write them (issue 47 item 8).
func TestHelp(t *testing.T) {
	helps := [][]string{{"help"}, {"-h"}, {"-help"}, {"--help"}}
	for name := range commands {
		for _, h := range []string{"--help", "-help", "-h"} {
			helps = append(helps, []string{name, h})
		}
		helps = append(helps, []string{"help", name})
	}
	for _, args := range helps {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		if code != 0 || !strings.HasPrefix(out.String(), "usage: lifenet") || errOut.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %.60q…, stderr %q: want 0 and the usage", args, code, out.String(), errOut.String())
		}
		if strings.Contains(out.String(), "`") {
			t.Errorf("%q: help has a back-quote:\n%s", args, out.String())
		}
		if strings.Contains(out.String(), "\nflags:\n") && !strings.Contains(out.String(), "\nflags:\n  --") || oneDash.MatchString(out.String()) {
			t.Errorf("%q: want every flag named with two dashes, as the help texts write them (issue 47 item 8):\n%s", args, out.String())
		}
	}
	var out bytes.Buffer
	run(context.Background(), []string{"help", "serve"}, &out, &out)
	for _, want := range []string{"\n  --port int\n", "\n  --metrics string\n", "\n  --metrics-conns int\n", "\n  --udp\n", "\n  --grace duration\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help serve lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	run(context.Background(), []string{"call", "--help"}, &out, &out)
	if !strings.Contains(out.String(), "usage: lifenet call [flags] ADDR ACTION [key=value … | JSON]") {
		t.Errorf("call --help does not name ADDR ACTION:\n%s", out.String())
	}
	out.Reset()
	run(context.Background(), []string{"rpcload", "--help"}, &out, &out)
	if !regexp.MustCompile(`(?m)^  --impl string$`).MatchString(out.String()) {
		t.Errorf("rpcload --help: no plain \"--impl string\" line:\n%s", out.String())
	}
}

// oneDash is a flag line of flag.PrintDefaults's own: "  -port int".
var oneDash = regexp.MustCompile(`(?m)^  -[^-]`)

// rangeMessage is the one phrasing of an out-of-range flag.
var rangeMessage = regexp.MustCompile(`^lifenet \w+: --[\w-]+ \S+: want between \S+ and \S+\n$`)

// TestRangeMessages: every out-of-range flag value is reported in one
// phrasing, "want between LO and HI", and exits 2 (issue 25 item 14).
func TestRangeMessages(t *testing.T) {
	for _, args := range [][]string{
		{"load", "--clients", "0"}, {"load", "--clients", "5000"}, {"load", "--size", "0"}, {"load", "--seconds", "0"},
		{"load", "--seconds", "NaN"}, {"load", "--warmup", "-1"}, {"load", "--port", "70000"}, {"load", "--frame", "-1"},
		{"load", "--rcvbuf", "-1"}, {"load", "--udpbatch", "5000"}, {"load", "--idle-exit", "0"}, {"load", "--first-client", "0"},
		{"load", "--codec", "srmp", "--window", "300"}, {"load", "--codec", "lengthfield", "--window", "-1"},
		{"matrix", "--clientprocs", "0"}, {"matrix", "--rounds", "26"}, {"matrix", "--seconds", "0"}, {"matrix", "--warmup", "61"},
		{"serve", "--port", "-1"}, {"serve", "--seconds", "-1"}, {"serve", "--grace", "-1s"},
		{"serve", "--metrics", "127.0.0.1:0", "--metrics-conns", "0"}, {"serve", "--metrics", "127.0.0.1:0", "--metrics-conns", "5000"},
		{"call", "--timeout", "0s", "127.0.0.1:1", "A/B"}, {"call", "--timeout", "2h", "127.0.0.1:1", "A/B"},
		{"rpcload", "--conns", "0"}, {"rpcload", "--inflight", "0"}, {"rpcload", "--conns", "4", "--inflight", "30000"},
		{"rpcload", "--seconds", "0"}, {"rpcload", "--warmup", "-1"}, {"rpcload", "--goroutines", "0"},
		{"soak", "--minutes", "0"}, {"soak", "--seconds", "0"}, {"soak", "--conns", "1"}, {"soak", "--interval", "0s"}, {"soak", "--interval", "2m"}, {"soak", "--sample", "50ms"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		if code != 2 || !rangeMessage.MatchString(errOut.String()) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and \"--flag V: want between LO and HI\"", args, code, errOut.String())
		}
	}
}

// TestUDPLossWarning: a UDP echo run whose datagrams are lost (a server
// that never answers) still exits 0 but warns on stderr and in its result
// (issue 25 item 14).
func TestUDPLossWarning(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() { // reads everything, answers nothing
		buf := make([]byte, 64<<10)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	for _, json := range []bool{false, true} {
		args := []string{"load", "--udp", "--remote", pc.LocalAddr().String(), "--seconds", "0.3", "--warmup", "0", "--clients", "1", "--size", "64"}
		if json {
			args = append(args, "--json")
		}
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		if code != 0 || !strings.Contains(errOut.String(), "lifenet load: WARNING: 100 % of the UDP datagrams were lost (more than 5 %)") {
			t.Errorf("%q: exit %d, stderr %q: want 0 and the warning", args, code, errOut.String())
		}
		if !strings.Contains(out.String(), `"warning":"100 % of the UDP datagrams were lost`) {
			t.Errorf("%q: the SUMMARY has no warning: %s", args, out.String())
		}
		if !json && !strings.Contains(out.String(), "WARNING     : 100 %") {
			t.Errorf("%q: the result block has no warning:\n%s", args, out.String())
		}
	}
	if !slices.Contains(strings.Fields(loadUsage()), "5") {
		t.Errorf("load --help does not mention the 5 %% warning:\n%s", loadUsage())
	}
}

func loadUsage() string {
	var out bytes.Buffer
	run(context.Background(), []string{"load", "--help"}, &out, &out)
	return out.String()
}
