package testwait_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/testwait"
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

// fatalTB records Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v := testwait.Recv(t, ch, 10*time.Second, "a value"); v != 7 {
		t.Fatalf("Recv = %d, want 7", v)
	}
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testwait.Recv(f, make(chan int), 20*time.Millisecond, "nothing")
	}()
	<-done
	if !strings.Contains(f.msg, "still waiting for nothing") {
		t.Fatalf("with nothing sent Recv failed with %q, want the awaited value named", f.msg)
	}
}
