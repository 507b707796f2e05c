//go:build lifenet_debug

package rpc

// debugCalls is true under the lifenet_debug build tag: an interceptor's
// *Invocation is never reused, and is emptied when its call ends, so an
// interceptor that keeps one past its return panics on its next use
// instead of reading another call.
const debugCalls = true
