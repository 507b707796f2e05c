package fleet

import (
	"fmt"
	"testing"
)

func TestParseSources(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                         "[]",
		"127.0.0.1-127.0.0.3":      "[127.0.0.1 127.0.0.2 127.0.0.3]",
		"127.0.0.1,10.0.0.5":       "[127.0.0.1 10.0.0.5]",
		"127.0.0.9-127.0.0.9, ::1": "error",
		"127.0.0.3-127.0.0.1":      "error",
		"nope":                     "error",
		"10.0.0.0-10.1.0.0":        "error", // past MaxSources
		"127.0.0.1-127.0.0.2,::1":  "error",
		"::1,::2":                  "[::1 ::2]",
		"127.0.0.254-127.0.1.1":    "[127.0.0.254 127.0.0.255 127.0.1.0 127.0.1.1]",
	} {
		got, err := ParseSources(in)
		s := fmt.Sprint(got)
		if err != nil {
			s = "error"
		}
		if s != want {
			t.Errorf("ParseSources(%q) = %s (%v), want %s", in, s, err, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "512": 512, "60KiB": 60 << 10, "60kb": 60000, "1MiB": 1 << 20, "2k": 2048, "x": -1, "-1": -1, "1.5KiB": -1} {
		got, err := ParseSize(in)
		if err != nil {
			got = -1
		}
		if got != want {
			t.Errorf("ParseSize(%q) = %d (%v), want %d", in, got, err, want)
		}
	}
}

func TestParseRateAndPIDs(t *testing.T) {
	t.Parallel()
	if n, err := ParseRate("2000/s"); n != 2000 || err != nil {
		t.Errorf("2000/s: %d %v", n, err)
	}
	if _, err := ParseRate("fast"); err == nil {
		t.Error("fast: no error")
	}
	if p, err := ParsePIDs("12, 34"); fmt.Sprint(p) != "[12 34]" || err != nil {
		t.Errorf("12, 34: %v %v", p, err)
	}
	if _, err := ParsePIDs("12,x"); err == nil {
		t.Error("12,x: no error")
	}
}
