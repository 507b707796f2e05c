package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
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
		{[]string{"soak", "--conns", "1"}, 2, "--conns"},
		{[]string{"soak", "--minutes", "1", "--seconds", "5"}, 2, "exclude"},
		{[]string{"version", "extra"}, 2, "extra"},
		{[]string{"version"}, 0, "lifenet "},
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
