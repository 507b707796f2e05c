package packet_test

import (
	"strings"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// leakyHelper takes a buffer and "forgets" it; its name must appear in the
// leak report.
func leakyHelper() *packet.Packet { return packet.Get(300) }

// The leak check, run on a deliberate leak, reports the buffer with the
// stack that took it; once released, the report is empty.
func TestLeakCheckReportsAllocationStack(t *testing.T) {
	start := leakcheck.Mark()
	leaked := leakyHelper()

	report := leakcheck.Buffers(start, 0)
	for _, want := range []string{"1 pooled buffer(s) never released", "(512 bytes)", "leakyHelper", "leak_test.go"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	leaked.Release()
	if report := leakcheck.Buffers(start, 0); report != "" {
		t.Errorf("report after release:\n%s", report)
	}
}
