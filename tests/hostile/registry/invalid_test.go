package registry_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/internal/logattr/logtest"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// invalidEntries are registry entries the cluster client cannot dial.
var invalidEntries = []string{
	"unix:///etc/passwd",
	"udp://",
	"ws://",
	"",
	strings.Repeat("a", 100<<10), // 100 KB
	"tcp://127.0.0.1:0",          // port 0
	"127.0.0.1",                  // no port
	"127.0.0.1:1,127.0.0.1:2",    // a list, not one server
	"tcp://127.0.0.1:1\r\nX: y",  // a control byte
	"file:///etc/passwd",
	"http://",
}

// Invalid entries beside a healthy one: the client keeps the healthy one
// alone, every call goes there, each invalid entry is logged once (the
// 100 KB one cut short; past the rate limit's burst, counted in one line),
// and the same set reported again logs nothing new.
// Every balancer takes the set.
func TestInvalidEntriesSkipped(t *testing.T) {
	leakcheck.Check(t)
	healthy := startServer(t, "healthy")
	var set []rpc.Endpoint
	for _, a := range invalidEntries {
		set = append(set, rpc.Endpoint{Addr: a})
	}
	set = append(set, rpc.Endpoint{Addr: healthy.addr}, rpc.Endpoint{Addr: healthy.addr}) // a repeat too
	for _, name := range []string{"failover", "round-robin", "weighted", "p2c", "hash"} {
		t.Run(name, func(t *testing.T) {
			b, err := balance.ByName(name, balance.Config{})
			must(t, err)
			rec, log := logtest.New(slog.LevelInfo)
			r := newSetResolver(set)
			c := dial(t, r, b, cluster.Config{Logger: log})
			eps := c.Endpoints()
			if len(eps) != 1 || eps[0].Addr != healthy.addr {
				t.Fatalf("endpoints kept: %+v; want the healthy one alone", eps)
			}
			before := healthy.calls.Load()
			for i := range 20 {
				ctx := rpc.WithBalanceKey(context.Background(), strings.Repeat("k", i))
				if who, err := cluster.Call[string](ctx, c, "Test/Who", nil); err != nil || who != "healthy" {
					t.Fatalf("call %d: %q, %v", i, who, err)
				}
			}
			if n := healthy.calls.Load() - before; n != 20 {
				t.Errorf("the healthy endpoint answered %d of 20 calls", n)
			}
			// One line per invalid entry, up to the rate limit's burst; the
			// rest are counted in one line when the client closes (or the
			// limit's interval ends).
			lines := min(len(invalidEntries), logattr.Burst)
			skipped := rec.Find(slog.LevelWarn, "cluster: endpoint skipped")
			if len(skipped) != lines {
				t.Errorf("%d lines of entries skipped, want %d (one per invalid entry, at most %d): %+v", len(skipped), lines, logattr.Burst, skipped)
			}
			for _, l := range skipped {
				if a, e := l.Attrs["addr"].String(), l.Attrs["err"].String(); len(a) > 200 || len(e) > 400 || e == "" {
					t.Errorf("a skipped entry's line: addr %d bytes, err %q (%d bytes); want both short, err not empty", len(a), e[:min(len(e), 80)], len(e))
				}
			}
			sets := rec.Find(slog.LevelInfo, "cluster: endpoint set")
			if len(sets) != 1 || sets[0].Attrs["skipped"].Int64() != int64(len(invalidEntries)+1) {
				t.Errorf("endpoint set lines: %+v; want one, skipping %d entries", sets, len(invalidEntries)+1)
			}
			// The same set twice more: nothing new logged.
			for range 2 {
				r.Set(set)
			}
			until(t, "the two sets applied", func() bool { return len(rec.Find(slog.LevelInfo, "cluster: endpoint set")) == 3 })
			if n := len(rec.Find(slog.LevelWarn, "cluster: endpoint skipped")); n != lines {
				t.Errorf("%d lines of entries skipped after the same set came twice more, want still %d", n, lines)
			}
			if eps := c.Endpoints(); len(eps) != 1 {
				t.Errorf("endpoints after the same set twice more: %+v", eps)
			}
			c.Close()
			var held uint64
			for _, l := range rec.Find(slog.LevelWarn, "cluster: log lines suppressed") {
				if l.Attrs[logattr.Line].String() == "cluster: endpoint skipped" {
					held += l.Attrs[logattr.Suppressed].Uint64()
				}
			}
			if want := uint64(len(invalidEntries) - lines); held != want {
				t.Errorf("%d skipped-entry lines counted as suppressed, want %d (every entry logged or counted once)", held, want)
			}
			if t.Failed() {
				return
			}
			t.Logf("FIGURES %s: %d invalid entries (and a repeat) skipped, %d logged once each and %d counted in the rate limit's summary line; 20 of 20 calls answered by the healthy endpoint", name, len(invalidEntries), lines, len(invalidEntries)-lines)
		})
	}
}

// A set of invalid entries alone: Dial still returns (the set is what the
// registry says), and a call fails at once with rpc.ErrNoEndpoints, not a
// dial error, nor a panic.
func TestOnlyInvalidEntries(t *testing.T) {
	leakcheck.Check(t)
	var set rpc.StaticResolver
	for _, a := range invalidEntries {
		set = append(set, rpc.Endpoint{Addr: a})
	}
	c := dial(t, set, roundRobin(t), cluster.Config{})
	if eps := c.Endpoints(); len(eps) != 0 {
		t.Fatalf("endpoints kept: %+v; want none", eps)
	}
	if _, err := cluster.Call[string](context.Background(), c, "Test/Who", nil); !errors.Is(err, rpc.ErrNoEndpoints) {
		t.Errorf("a call with no valid endpoint: %v; want rpc.ErrNoEndpoints", err)
	}
}
