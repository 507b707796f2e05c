//go:build lifenet_debug

package conns_test

// debugBuild reports a lifenet_debug build, where every pooled buffer taken
// records its stack: buffer-heavy items cost several times more there.
const debugBuild = true
