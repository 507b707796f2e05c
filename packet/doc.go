// Package packet provides pooled, reference-counted byte buffers, the memory
// every lifenet network layer receives into and sends from, and a byte pipe
// ([Pipe]) for stream protocols built on them.
//
// A *[Packet] is a handle: a view (offset, length) of a storage owner, plus an
// optional Next segment for scatter/gather. Pooled packets come from [Get] and
// share one size-class pool per power of two from 64 B to 4 MiB; larger
// requests are plain allocations that are never pooled. Wrap makes a plain,
// non-owning view of caller memory behind the same API.
//
// # Ownership
//
// Every handle holds one reference to its owner. Slice and Share make new
// handles (reference +1) without copying; each handle is released on its
// own, and the storage returns to its pool exactly once, when the last handle
// is released. Release releases the whole chain starting at the handle.
// Releasing a handle twice panics with [ErrReleased]; a reference count that
// would go below zero panics with ErrOverRelease. Build with the
// lifenet_debug tag to also detect any use of a released handle, poison
// freed storage, and record the allocation stack of every outstanding buffer
// (the tests' leak check switches the same tracking on in any build).
//
// # Concurrency
//
// A handle belongs to one goroutine at a time. Methods that only read it (Len,
// Bytes, At, CopyTo, Slice, Share, Hex) may be called concurrently; methods
// that change it (Release, Write, Resize, Skip, ExpandHeader, Chain) need
// exclusive access. Different handles of one owner may be used and released
// from different goroutines freely; the reference count is atomic. Writing
// bytes that another handle can see is the caller's business, as with any
// shared slice.
package packet
