//go:build lifenet_debug

package packet_test

import (
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// In lifenet_debug builds a view used after its loan ended panics with
// ErrReleased, while what was kept of it stays valid.
func TestLoanViewUseAfterEndDetected(t *testing.T) {
	leakcheck.Check(t)
	src := packet.Get(packet.KeepCopyBelow + 10)
	fill(src, 0)
	var l packet.Loan
	v := l.Lend(src, 0, packet.KeepCopyBelow)
	share, kept := v.Share(), v.Keep()
	l.End()
	for name, use := range map[string]func(){
		"Len":      func() { v.Len() },
		"Bytes":    func() { v.Bytes() },
		"At":       func() { v.At(0) },
		"Borrowed": func() { v.Borrowed() },
		"Keep":     func() { v.Keep() },
		"Share":    func() { v.Share() },
		"Slice":    func() { v.Slice(0, 1) },
		"Clone":    func() { v.Clone() },
		"Release":  func() { v.Release() },
	} {
		mustPanicWith(t, name+" after End", packet.ErrReleased, use)
	}
	if share.Len() != packet.KeepCopyBelow || kept.At(1) != 1 || src.RefCount() != 3 {
		t.Fatalf("kept views after End: share len %d, kept byte %d, source refs %d",
			share.Len(), kept.At(1), src.RefCount())
	}
	share.Release()
	kept.Release()
	src.Release()
}
