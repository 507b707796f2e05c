//go:build linux

package transport

import (
	"math"
	"testing"
	"unsafe"
)

// A poll slot is 16 bytes (every parked connection has one), and its wake
// time is never earlier than the deadline it was given, nor more than a
// unit (67 ms) later.
func TestPollSlotIs16BytesAndWakesNoEarlier(t *testing.T) {
	if n := unsafe.Sizeof(pollSlot{}); n > 16 {
		t.Errorf("pollSlot is %d bytes, want at most 16", n)
	}
	const unit = int64(1) << wakeUnitShift
	for _, at := range []int64{1, unit - 1, unit, unit + 1, 3_600e9, 86_400e9 * 365, (math.MaxUint32 - 1) << wakeUnitShift} {
		w := int64(wakeUnits(at)) << wakeUnitShift
		if w < at || w-at >= unit {
			t.Errorf("wakeUnits(%d) wakes at %d: want within [at, at+%d)", at, w, unit)
		}
	}
	if wakeUnits(0) != 0 || wakeUnits(-5) != 0 {
		t.Error("no deadline must stay none")
	}
	if wakeUnits(math.MaxInt64) != 0 || wakeUnits((math.MaxUint32-1)<<wakeUnitShift+1) != 0 {
		t.Error("a deadline past 9 years must be taken as none, not wrap to an early one")
	}
}
