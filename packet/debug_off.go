//go:build !lifenet_debug

package packet

// debug is false in normal builds: released handles are recycled through a
// pool, and misuse is caught only where it is cheap (double release, reference
// count underflow).
const debug = false
