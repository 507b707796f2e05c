//go:build lifenet_debug

package main

// debugBuild: the test binary has the library's debug checks on (the
// Prometheus test, whose binaries are built without them, runs in the
// normal build only).
const debugBuild = true
