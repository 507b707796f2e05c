package matrix

import (
	"strings"
	"testing"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/loadtest"
)

// A TCP codec echo row says what each side does: both clients match
// every reply (by sequence number for SRMP, by order for the length
// field). When the baseline's client only counted reply bytes (a report
// from before it matched, or --count-replies), its phrase and a note say
// the row is not like for like; other rows get no such note.
func TestCodecRowsSayWhatEachSideDoes(t *testing.T) {
	for _, sc := range Full() {
		tcpCodec := sc.Codec != "" && sc.Proto == "tcp" && sc.Mode != "oneway"
		for _, replies := range []string{"matched", "counted", ""} {
			p := pair{sc: sc, raw: &Result{Scenario: sc, Impl: "raw", Client: &loadtest.Summary{Replies: replies}}}
			lifenet, baseline := sides(p)
			n := strings.Join(notes(p, nil), "\n")
			counted := tcpCodec && replies != "matched"
			if got := strings.Contains(n, "not like for like"); got != counted {
				t.Errorf("%s, replies %q: the note %v, want %v (notes %q)", sc.Name, replies, got, counted, n)
			}
			if !tcpCodec {
				continue
			}
			match := "by sequence number"
			if sc.Codec == "lengthfield" {
				match = "by order"
			}
			if !strings.Contains(lifenet, "matches each reply "+match) {
				t.Errorf("%s: lifenet does %q", sc.Name, lifenet)
			}
			if got := strings.Contains(baseline, "matches each reply "+match); got == counted || strings.Contains(baseline, "counts reply bytes") != counted {
				t.Errorf("%s, replies %q: baseline does %q", sc.Name, replies, baseline)
			}
		}
	}
}
