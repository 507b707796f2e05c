package leakcheck

import "github.com/lifenet/lifenet/internal/pooltrack"

// Mark switches on tracking of pooled buffers and returns a mark:
// Outstanding(mark) reports the buffers taken after this call that are not
// yet released. Tracking stays on for the rest of the process (a buffer
// taken while it is on must still be found when it is released), at the
// cost of a mutex and a stack capture per pooled Get. Safe for concurrent
// use.
func Mark() uint64 {
	pooltrack.Enable()
	return pooltrack.Seq()
}

// Outstanding returns the tracked buffers taken after mark and not yet
// released, oldest first; each record has the stack that took it.
func Outstanding(mark uint64) []pooltrack.Record { return pooltrack.Since(mark) }
