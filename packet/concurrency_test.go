package packet_test

import (
	"sync"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// Many goroutines slice one owner concurrently and release their slices in
// any order; the storage must be recycled exactly once, after the last.
func TestConcurrentShareAndRelease(t *testing.T) {
	leakcheck.Check(t)
	rc, done := packet.CountRecycles()
	defer done()

	const goroutines, rounds = 32, 500
	p := packet.Get(4096)
	fill(p, 0)
	key := packet.OwnerOf(p)

	handed := make(chan *packet.Packet, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				off := (g*rounds + i) % 4000
				s := p.Slice(off, 8) // read-only use of the shared handle
				if s.At(0) != byte(off) {
					t.Errorf("slice at %d reads %d", off, s.At(0))
				}
				if i%50 == 0 {
					handed <- s.Share() // released by another goroutine
				}
				s.Release()
			}
		})
	}
	var rel sync.WaitGroup
	rel.Go(func() {
		for s := range handed {
			s.Release()
		}
	})
	wg.Wait()
	if rc.Of(key) != 0 {
		t.Fatal("storage recycled while its first handle is live")
	}
	p.Release()
	close(handed)
	rel.Wait()
	if rc.Of(key) != 1 {
		t.Fatalf("storage recycled %d times, want exactly 1", rc.Of(key))
	}
}

// Independent packets taken and released from many goroutines at once.
func TestConcurrentGetRelease(t *testing.T) {
	leakcheck.Check(t)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 1000 {
				p := packet.Get((g*131 + i*17) % 70000)
				if p.Len() > 0 {
					p.SetAt(p.Len()-1, 1)
				}
				p.Release()
			}
		})
	}
	wg.Wait()
}
