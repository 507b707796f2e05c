//go:build lifenet_debug

package packet

import "github.com/lifenet/lifenet/internal/pooltrack"

// debug is true under the lifenet_debug build tag: handles are never
// recycled, so any use of a released handle panics with [ErrReleased]; freed
// storage is poisoned; and every outstanding buffer is tracked with its stack.
const debug = true

func init() { pooltrack.Enable() }
