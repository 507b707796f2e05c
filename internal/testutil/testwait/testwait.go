// Package testwait is the one way lifenet's tests wait with a bound: for a
// value on a channel (Recv), or for a condition that nothing signals (a
// counter another goroutine moves, a kernel queue: For polls it until it
// holds). Either fails the test with what was awaited when it does not
// come in time. Where an event can be waited on (a channel, a Done, a
// synctest bubble), tests wait on that (Recv) rather than poll.
package testwait

import (
	"testing"
	"time"
)

// poll is how often the condition is checked: short next to any timeout a
// test asserts, long enough not to steal the CPU the awaited work needs.
const poll = 2 * time.Millisecond

// For checks cond until it returns true and fails t (Fatal) when it still
// returns false after wait. what names the condition in the failure.
func For(t testing.TB, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(wait, cond) {
		t.Fatalf("after %v still waiting for %s", wait, what)
	}
}

// Recv receives one value from ch and fails t (Fatal) when none comes
// within wait. what names the value in the failure.
func Recv[T any](t testing.TB, ch <-chan T, wait time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("after %v still waiting for %s", wait, what)
		panic("unreachable")
	}
}

// Until checks cond until it returns true or wait has passed, and reports
// whether it held.
func Until(wait time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(poll)
	}
	return true
}
