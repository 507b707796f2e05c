package testwait_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testwait"
)

func TestUntil(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	if !testwait.Until(10*time.Second, func() bool { return n.Load() == 3 }) {
		t.Fatal("a condition that comes true was not seen")
	}
	start := time.Now()
	if testwait.Until(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported to hold")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("gave up after %v, before the 20 ms asked for", d)
	}
}
