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
	if code, done := c.Parse([]string{"-help"}, &out, &errOut); code != ExitOK || !done || !strings.HasPrefix(out.String(), "usage: lifenet x [flags]\n  about x\n\nflags:\n  --n int") {
		t.Errorf("-help: %d %v %q", code, done, out.String())
	}
	if code, done := c.Parse([]string{"extra"}, &out, &errOut); code != ExitUsage || !done || errOut.String() != "lifenet x: unexpected argument \"extra\"\n" {
		t.Errorf("an argument: %d %v %q", code, done, errOut.String())
	}
	if code, done := c.Parse([]string{"-n", "3"}, &out, &errOut); code != ExitOK || done || *n != 3 {
		t.Errorf("-n 3: %d %v %d", code, done, *n)
	}
}

// TestDashes: the help names every flag with two dashes, whatever its
// kind (a one-letter boolean's line holds its usage too); usage lines and
// lines already with two dashes are left alone (issue 47 item 8).
func TestDashes(t *testing.T) {
	c := New("x", "", "")
	c.Bool("v", false, "verbose")
	c.String("host", "127.0.0.1", "address\n-not a flag")
	c.Duration("grace", time.Second, "how long")
	var out bytes.Buffer
	c.Usage(&out)
	for _, want := range []string{"\n  --grace duration\n", "\n  --host string\n", "\n  --v\tverbose\n", "\n    \t-not a flag"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "\n  -"); n != 3 {
		t.Errorf("%d flag lines, want 3:\n%s", n, out.String())
	}
	if got := Dashes("  --a int\n  - x\n"); got != "  --a int\n  - x\n" {
		t.Errorf("Dashes changed %q", got)
	}
}
