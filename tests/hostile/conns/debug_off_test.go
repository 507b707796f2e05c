//go:build !lifenet_debug

package conns_test

// debugBuild reports a lifenet_debug build; see debug_on_test.go.
const debugBuild = false
