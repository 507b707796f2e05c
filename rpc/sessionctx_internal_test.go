package rpc

import (
	"context"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// rawCall sends an SRMP request for action with no arguments on c and
// reads its reply's first bytes.
func rawCall(t *testing.T, c net.Conn, action string) {
	t.Helper()
	f := []byte{0x01, 0x01, byte(1 + len(action)), 0, byte(len(action))}
	if _, err := c.Write(append(f, action...)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
}

// A session's context costs nothing until something waits on it: after a
// call whose handler never looks at its context, the session holds none.
// A handler that waits makes it; children of the handler's context join
// it as a standard context's children (no goroutine each), and end with
// the session.
func TestSessionContextIsMadeWhenWaitedOn(t *testing.T) {
	leakcheck.Check(t)
	s, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessions := make(chan *Session, 2)
	ended := make(chan error, 1)
	grown := make(chan int, 1)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(Handle(s, "T/Quiet", func(ctx context.Context, _ struct{}) (int, error) {
		sessions <- SessionFrom(ctx)
		return 1, nil
	}))
	must(Handle(s, "T/Children", func(ctx context.Context, _ struct{}) (int, error) {
		before := runtime.NumGoroutine()
		var cancels []context.CancelFunc
		for range 200 {
			_, cancel := context.WithTimeout(ctx, time.Hour)
			cancels = append(cancels, cancel)
		}
		grew := runtime.NumGoroutine() - before
		for _, c := range cancels {
			c()
		}
		grown <- grew
		go func() {
			<-ctx.Done()
			ended <- ctx.Err()
		}()
		sessions <- SessionFrom(ctx)
		return 1, nil
	}))
	a, err := s.Listen(context.Background(), "tcp", "127.0.0.1:0")
	must(err)
	c, err := net.Dial("tcp", a.String())
	must(err)
	defer c.Close()

	rawCall(t, c, "T/Quiet")
	ss := <-sessions
	if ss == nil || ss.lived.Load() != nil {
		t.Fatalf("after a call that never waited: session %p holds a context %v", ss, ss.lived.Load())
	}
	if ss.ctx().Err() != nil {
		t.Fatalf("an open session's context: %v", ss.ctx().Err())
	}

	rawCall(t, c, "T/Children")
	if g := <-grown; g >= 100 {
		t.Errorf("200 children of a handler's context started %d goroutines: want them to join the session's context", g)
	}
	if got := <-sessions; got != ss || ss.lived.Load() == nil {
		t.Fatalf("after a call that waited: session %p (want %p), context %v", got, ss, ss.lived.Load())
	}
	c.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context did not end with its connection")
	}
	if !errors.Is(ss.ctx().Err(), context.Canceled) {
		t.Errorf("an ended session's context: %v", ss.ctx().Err())
	}
}

// The call context a session caches for its plain calls (one per action
// it calls: every idle device's session holds one) stays in the 80-byte
// size class: what a call may carry besides its token is apart.
func TestCachedCallContextIs80BytesAtMost(t *testing.T) {
	if n := unsafe.Sizeof(callCtx{}); n > 80 {
		t.Errorf("callCtx is %d bytes, want at most 80", n)
	}
	if n := unsafe.Sizeof(Session{}); n > 112 {
		t.Errorf("Session is %d bytes, want at most 112", n)
	}
}
