package mono_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/mono"
)

func TestReadingsArePositiveAndMoveForward(t *testing.T) {
	a := mono.Now()
	time.Sleep(2 * time.Millisecond)
	b := mono.Now()
	if a <= 0 || b-a < int64(2*time.Millisecond) {
		t.Fatalf("readings %d then %d, want positive and at least 2 ms apart", a, b)
	}
}

func TestTimeRoundTripsAndKeepsTheMonotonicReading(t *testing.T) {
	now := time.Now()
	ns := mono.Of(now)
	back := mono.Time(ns)
	if !back.Equal(now) {
		t.Fatalf("Time(Of(now)) = %v, want %v", back, now)
	}
	// A monotonic reading shows in the String form as "m=±…".
	if s := back.String(); !strings.Contains(s, " m=") {
		t.Fatalf("Time(%d) = %q carries no monotonic reading", ns, s)
	}
	if d := time.Until(mono.Time(ns + int64(time.Hour))); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("a reading an hour ahead is %v away", d)
	}
}
