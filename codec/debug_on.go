//go:build lifenet_debug

package codec

// debug is true under the lifenet_debug build tag (see package packet):
// the flat loop ends each frame's loan before the next, so that a handler
// that kept its borrowed view past the call panics when it uses it.
const debug = true
