//go:build !lifenet_debug

package codec

// debug is true under the lifenet_debug build tag (see package packet).
const debug = false
