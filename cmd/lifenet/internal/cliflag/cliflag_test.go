package cliflag

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestBetween(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{Between("conns", 0, 1, 4096), "--conns 0: want between 1 and 4096"},
		{Between("seconds", 0.0, 0.1, 3600), "--seconds 0: want between 0.1 and 3600"},
		{Between("seconds", math.NaN(), 0.1, 3600), "--seconds NaN: want between 0.1 and 3600"},
		{Between("timeout", 2*time.Hour, time.Millisecond, time.Hour), "--timeout 2h0m0s: want between 1ms and 1h0m0s"},
		{Between("conns", 1, 1, 4096), ""},
		{Between("conns", 4096, 1, 4096), ""},
	} {
		got := ""
		if c.err != nil {
			got = c.err.Error()
		}
		if got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	c := New("x", "", "  about x")
	n := c.Int("n", 1, "a number")
	var out, errOut bytes.Buffer
	if code, done := c.Parse([]string{"-help"}, &out, &errOut); code != ExitOK || !done || !strings.HasPrefix(out.String(), "usage: lifenet x [flags]\n  about x\n\nflags:\n  -n int") {
		t.Errorf("-help: %d %v %q", code, done, out.String())
	}
	if code, done := c.Parse([]string{"extra"}, &out, &errOut); code != ExitUsage || !done || errOut.String() != "lifenet x: unexpected argument \"extra\"\n" {
		t.Errorf("an argument: %d %v %q", code, done, errOut.String())
	}
	if code, done := c.Parse([]string{"-n", "3"}, &out, &errOut); code != ExitOK || done || *n != 3 {
		t.Errorf("-n 3: %d %v %d", code, done, *n)
	}
}
