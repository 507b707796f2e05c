//go:build lifenet_debug

package packet_test

import (
	"errors"
	"testing"

	"github.com/lifenet/lifenet/packet"
)

// In lifenet_debug builds any use of a released handle is caught.
func TestUseAfterReleaseDetected(t *testing.T) {
	p := packet.Get(10)
	s := p.Share()
	p.Release()
	for name, use := range map[string]func(){
		"Len":   func() { p.Len() },
		"Bytes": func() { p.Bytes() },
		"At":    func() { p.At(0) },
		"Slice": func() { p.Slice(0, 1) },
		"Write": func() { p.Write([]byte{1}) },
	} {
		v := mustPanic(t, use)
		if err, _ := v.(error); !errors.Is(err, packet.ErrReleased) {
			t.Errorf("%s after Release: panic %v, want ErrReleased", name, v)
		}
	}
	s.Release()
}

// In lifenet_debug builds freed storage is poisoned, so stale reads through
// an escaped slice show it.
func TestFreedStoragePoisoned(t *testing.T) {
	for _, n := range []int{1, 4, 1000, 64 << 10} {
		p := packet.Get(n)
		b := p.Bytes()[:cap(p.Bytes())] // the whole storage, past the requested length
		p.Release()
		for i, v := range b {
			if v != 0xDE {
				t.Fatalf("Get(%d): freed byte %d of %d = %#x, want poison 0xde", n, i, len(b), v)
			}
		}
	}
}
