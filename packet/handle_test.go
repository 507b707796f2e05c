package packet_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// Get hands out a handle that comes and goes with its storage. A handle
// that Write moved to larger storage lives on, so its first storage, once
// released, is never handed out again: a later Get of that size must not
// return the live handle.
func TestGrownHandleIsNeverGivenOutAgain(t *testing.T) {
	leakcheck.Check(t)
	for range 100 {
		p := packet.Get(64)
		s := p.Share()                          // keeps the first storage alive past the move
		p.Write(bytes.Repeat([]byte{'g'}, 100)) // grows into new storage
		s.Release()                             // the first storage's last handle
		q := packet.Get(64)
		if q == p {
			t.Fatal("Get returned a handle that is still in use (the grown one)")
		}
		fill(q, 0)
		if !bytes.Equal(p.Bytes()[64:], bytes.Repeat([]byte{'g'}, 100)) {
			t.Fatal("the grown handle's bytes changed")
		}
		q.Release()
		p.Release()
	}
}

// The handle Get returned may be released before the shares of its
// storage: the storage, and the handle with it, is reused only after the
// last share.
func TestHandleReleasedBeforeItsShares(t *testing.T) {
	leakcheck.Check(t)
	p := packet.Get(64)
	fill(p, 1)
	want := append([]byte(nil), p.Bytes()...)
	s := p.Slice(0, 64)
	p.Release()
	var others []*packet.Packet
	for range 16 {
		q := packet.Get(64)
		if q == s {
			t.Fatal("Get returned a live share")
		}
		fill(q, 0xE0)
		others = append(others, q)
	}
	if !bytes.Equal(s.Bytes(), want) {
		t.Fatalf("a share's bytes changed after the handle Get returned was released: % x", s.Bytes()[:8])
	}
	s.Release()
	for _, q := range others {
		q.Release()
	}
}

// Shares released on many goroutines while the handle Get returned is
// released on another: every storage goes back once (no panic, no race),
// and what Get returns next is whole.
func TestConcurrentReleaseOfHandleAndShares(t *testing.T) {
	leakcheck.Check(t)
	for range 200 {
		p := packet.Get(128)
		fill(p, 3)
		shares := make([]*packet.Packet, 4)
		for i := range shares {
			shares[i] = p.Slice(i*32, 32)
		}
		var wg sync.WaitGroup
		for _, s := range shares {
			wg.Go(func() {
				if s.At(0) == 0 && s.At(1) == 0 {
					t.Error("a share read zeroed bytes")
				}
				s.Release()
			})
		}
		wg.Go(p.Release)
		wg.Wait()
		q := packet.Get(128)
		if q.Len() != 128 || q.RefCount() != 1 {
			t.Fatalf("Get after the releases: len %d, refs %d", q.Len(), q.RefCount())
		}
		q.Release()
	}
}
