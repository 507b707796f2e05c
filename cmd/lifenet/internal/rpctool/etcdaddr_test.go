package rpctool

import (
	"slices"
	"strings"
	"testing"
)

func TestParseEtcd(t *testing.T) {
	for _, c := range []struct {
		in      string
		members []string
		service string
		err     string
	}{
		{in: "etcd://127.0.0.1:2379/bench", members: []string{"127.0.0.1:2379"}, service: "bench"},
		{in: "etcd://a:1,b:2,[::1]:3/calc", members: []string{"a:1", "b:2", "[::1]:3"}, service: "calc"},
		{in: "etcd://127.0.0.1:2379", err: "no SERVICE"},
		{in: "etcd://127.0.0.1:2379/", err: "no SERVICE"},
		{in: "etcd://127.0.0.1:2379/a/b", err: "may not contain"},
		{in: "etcd://127.0.0.1:2379/a?x=1", err: "may not contain"},
		{in: "etcd://127.0.0.1/bench", err: "not HOST:PORT"},
		{in: "etcd://a:1,/bench", err: "not HOST:PORT"},
		{in: "etcd:///bench", err: "not HOST:PORT"},
		{in: "tcp://127.0.0.1:2379/bench", err: "want etcd://"},
	} {
		s, err := parseEtcd(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseEtcd(%q) = %+v, %v; want an error naming %q", c.in, s, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(s.members, c.members) || s.service != c.service || s.String() != c.in {
			t.Errorf("parseEtcd(%q) = %+v (%s), %v; want %v %q", c.in, s, s, err, c.members, c.service)
		}
	}
}

// FuzzParseEtcd: parseEtcd never panics, and what it accepts prints back
// as an address it parses the same.
func FuzzParseEtcd(f *testing.F) {
	for _, s := range []string{"etcd://127.0.0.1:2379/bench", "etcd://a:1,b:2/x", "etcd://[::1]:1/s", "etcd://x/", "etcd://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := parseEtcd(in)
		if err != nil {
			return
		}
		again, err := parseEtcd(s.String())
		if err != nil || !slices.Equal(again.members, s.members) || again.service != s.service || len(s.members) == 0 || s.service == "" {
			t.Fatalf("parseEtcd(%q) = %+v, whose String %q parses as %+v, %v", in, s, s, again, err)
		}
	})
}
