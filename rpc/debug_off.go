//go:build !lifenet_debug

package rpc

// debugCalls is false in normal builds: an interceptor's *Invocation is reused
// through a pool once its call ends.
const debugCalls = false
