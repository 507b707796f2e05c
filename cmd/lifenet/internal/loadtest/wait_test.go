package loadtest

import (
	"time"

	"github.com/lifenet/lifenet/internal/testutil/testwait"
)

// eventually polls cond until it holds (true) or 10 s pass (false). It is
// for conditions the code under test offers no way to wait on (a server's
// byte counter, the kernel's socket table): the interval only sets how
// soon a true condition is seen, and the patience is generous for a loaded
// machine.
func eventually(cond func() bool) bool { return testwait.Until(10*time.Second, cond) }
