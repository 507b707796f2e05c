package loadtest

import "time"

// eventually polls cond until it holds (true) or 10 s pass (false). It is
// for conditions the code under test offers no way to wait on (a server's
// byte counter, the kernel's socket table): the interval only sets how
// soon a true condition is seen, and the patience is generous for a loaded
// machine.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
