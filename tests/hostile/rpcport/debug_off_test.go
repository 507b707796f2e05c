//go:build !lifenet_debug

package rpcport_test

// debugBuild reports a lifenet_debug build; see debug_on_test.go.
const debugBuild = false
