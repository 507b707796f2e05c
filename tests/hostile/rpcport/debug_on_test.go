//go:build lifenet_debug

package rpcport_test

// debugBuild reports a lifenet_debug build, where every pooled buffer taken
// records its stack and every released one is poisoned byte by byte:
// buffer-heavy attacks cost several times more there.
const debugBuild = true
