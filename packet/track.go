package packet

import "github.com/lifenet/lifenet/packet/internal/pooltrack"

// TrackBuffers switches on tracking of pooled buffers and returns a mark:
// Outstanding(mark) reports the buffers taken after this call that are not
// yet released. It is a debugging aid for leak checks in tests.
//
// Tracking stays on for the rest of the process (a buffer taken while it is
// on must still be found when it is released), so calling TrackBuffers again
// only takes a new mark. While it is on, every Get records the stack that
// took the buffer, at the cost of a mutex and a stack capture; while it is
// off (the default, except in lifenet_debug builds, which switch it on at
// start-up) the only cost is one atomic load per Get and Release. Safe for
// concurrent use.
func TrackBuffers() (mark uint64) {
	pooltrack.Enable()
	return pooltrack.Seq()
}

// Outstanding returns the tracked buffers taken after mark (a value returned
// by TrackBuffers) and not yet released, oldest first. Safe for concurrent
// use.
func Outstanding(mark uint64) []TrackedBuffer {
	recs := pooltrack.Since(mark)
	bufs := make([]TrackedBuffer, len(recs))
	for i, r := range recs {
		bufs[i] = TrackedBuffer{Seq: r.Seq, Size: r.Size, rec: r}
	}
	return bufs
}

// TrackedBuffer describes one pooled buffer reported by Outstanding.
type TrackedBuffer struct {
	Seq  uint64 // order in which tracked buffers were taken, starting at 1
	Size int    // capacity of the storage in bytes
	rec  pooltrack.Record
}

// Stack formats the stack that took the buffer, innermost frame first, one
// function and its file:line per frame.
func (b TrackedBuffer) Stack() string { return b.rec.Stack() }
