package transport

import (
	"io"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// A server's session that parks keeps the staging buffer of its replies
// between reads while it is busy (a serial peer's next reply takes none
// from the pool) and gives it back when it parks: an idle connection
// holds none. (ParkAfter is long enough that the check after the second
// echo comes before the session parks, however loaded the machine.)
func TestParkingSessionKeepsItsStagingBufferUntilItParks(t *testing.T) {
	leakcheck.Check(t)
	sessions := make(chan *Session, 1)
	srv, c := dialNewServer(t, Config{ParkAfter: 2 * time.Second}, Hooks{
		OnOpen:    func(s *Session) { sessions <- s },
		OnReceive: func(s *Session, p *packet.Packet) { s.SendBytes(p.Bytes()) },
	})
	held := func(s *Session) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.sendState != nil && s.spareStage != nil
	}
	echo := func() {
		t.Helper()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 4)
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
			t.Fatalf("echo %q, %v", got, err)
		}
	}
	echo()
	s := <-sessions
	// A session woken after a quiet spell reads what came and parks again
	// at once (giving the buffer back); one that keeps receiving reads on
	// and keeps it: echo until a reply's buffer is seen kept.
	deadline := time.Now().Add(10 * time.Second)
	for kept := false; !kept; {
		if time.Now().After(deadline) {
			t.Fatal("a busy session kept no staging buffer after its replies")
		}
		echo()
		for i := 0; i < 100 && !kept; i++ { // the reply's write ends just after the echo reads it
			kept = held(s)
			time.Sleep(100 * time.Microsecond)
		}
	}
	for srv.Stats().Parked != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the session did not park")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if held(s) {
		t.Fatal("a parked session holds its staging buffer")
	}
	echo() // woken, it serves on
}
