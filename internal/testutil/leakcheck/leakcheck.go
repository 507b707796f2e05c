// Package leakcheck is the teardown check every lifenet test uses: at the end
// of a test no pooled buffer taken during it may be outstanding and no
// goroutine started during it may still run.
//
// Tests that call Check must not run in parallel with other tests: buffer
// tracking is process-wide, and so are the goroutines a package shares
// between its users (transport's clock and poller start with the first
// server and stop with the last), which a parallel test's check would
// count as its own. Check enforces this (see [Check]).
package leakcheck

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifenet/lifenet/internal/pooltrack"
)

// checked holds the tests Check has registered its cleanup on.
var checked sync.Map

// settle is how long teardown waits for buffers that are released
// asynchronously (by goroutines that are finishing) before it reports them.
const settle = 2 * time.Second

// Check switches buffer tracking on and registers a cleanup on t that fails
// the test if buffers taken after this call are still outstanding, or if
// goroutines started after this call are still running. Call it first in a
// test, before anything that takes buffers or starts goroutines. It panics
// if t runs in parallel (t.Setenv's rule), since another test's goroutines
// would count as t's. A second call on the same test does nothing: the
// first one's check runs last,
// after every cleanup registered since (a helper that calls Check, called
// twice, would otherwise check while the first helper's server still ran).
func Check(t testing.TB) {
	t.Helper()
	if _, dup := checked.LoadOrStore(t, struct{}{}); dup {
		return
	}
	// t.Setenv panics in a parallel test and makes a later t.Parallel
	// panic: a checked test cannot run beside others either way.
	t.Setenv("LIFENET_LEAKCHECK", "1")
	start := Mark()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		defer checked.Delete(t)
		if err := goleak.Find(ignore); err != nil {
			t.Errorf("leakcheck: goroutines left running: %v", err)
		}
		if report := Buffers(start, settle); report != "" {
			t.Error(report)
		}
	})
}

// Buffers waits up to wait for every buffer taken after start (a mark from
// Mark) to be released and returns "" if they were, or a
// report naming each outstanding buffer with the stack that took it.
func Buffers(start uint64, wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		recs := Outstanding(start)
		if len(recs) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return format(recs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func format(recs []pooltrack.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "leakcheck: %d pooled buffer(s) never released:\n", len(recs))
	for _, r := range recs {
		fmt.Fprintf(&b, "buffer #%d (%d bytes) taken at:\n%s", r.Seq, r.Size, r.Stack())
	}
	return b.String()
}
