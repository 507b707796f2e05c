package matrix

import (
	"context"
	"os"
	"strings"
	"testing"
)

// The TCP codec rows run like for like in separate processes: lifenet's
// codec client and the baseline's std client both match every reply to
// its request (windowed by sequence number, serial by order), each run's
// summary says so, and the report's row says what each side does.
func TestMatrixRunsCodecRowsLikeForLike(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	t.Setenv("LIFENET_TEST_AS_CLI", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := Options{Exe: exe, Out: dir, Seconds: 0.5, Warmup: 0, IdleExit: 0.5, ClientProcs: 1, BasePort: 18200}
	list, err := Filter(Full(), "^tcp-32B-(srmp-window|lengthfield-serial)-1C$")
	if err != nil {
		t.Fatal(err)
	}
	results := Run(context.Background(), opts, list)
	if len(results) != 4 {
		t.Fatalf("%d results, want 4", len(results))
	}
	for _, r := range results {
		c := r.Client
		if r.Error != "" || c == nil || c.MsgsPerSec <= 0 || c.ConnErrors != 0 || c.Replies != "matched" || c.Impl != r.Impl {
			t.Fatalf("%s/%s: %+v (client %+v)", r.Name, r.Impl, r, c)
		}
		if r.Mode == "pipeline" && (c.Window != 255 || c.IntegrityDiff == nil || *c.IntegrityDiff != 0) {
			t.Errorf("%s/%s: window %d, integrity %v", r.Name, r.Impl, c.Window, c.IntegrityDiff)
		}
	}
	var b strings.Builder
	writeVerdict(&b, pairs(results))
	for _, want := range []string{
		"| tcp-32B-srmp-window-1C | codec client, 255 requests in flight, matches each reply by sequence number to its caller; codec server echoes | " +
			"std client, 255 requests in flight, matches each reply by sequence number to its caller; std frame loop echoes |",
		"| tcp-32B-lengthfield-serial-1C | codec client, one request at a time, matches each reply by order to its caller; codec server echoes | " +
			"std client, one request at a time, matches each reply by order to its caller; std frame loop echoes |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("verdict lacks %q:\n%s", want, b.String())
		}
	}
}
