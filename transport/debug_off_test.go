//go:build !lifenet_debug

package transport_test

// debugBuild: packet's lifenet_debug mode is on, which tracks every
// pooled buffer (an allocation per packet.Get) from start-up.
const debugBuild = false
