//go:build !lifenet_debug

package codec_test

// debugBuild: packet's lifenet_debug mode is on (a released or ended
// handle panics when used).
const debugBuild = false
