package matrix

import (
	"strings"
	"testing"
)

// A windowed codec row, where both ends are lifenet's, says that the
// client is most of the gap and how to measure the server alone; the
// serial codec rows and the byte rows get no such note.
func TestNotesAttributeTheWindowedCodecRowsToTheClient(t *testing.T) {
	for _, sc := range Full() {
		n := strings.Join(notes(pair{sc: sc}, nil), "\n")
		windowed := sc.Codec != "" && sc.Window > 0 && sc.Proto == "tcp"
		if got := strings.Contains(n, "codec client is most of the gap"); got != windowed {
			t.Errorf("%s: the client note %v, want %v (notes %q)", sc.Name, got, windowed, n)
		}
		if windowed && !strings.Contains(n, "scripts/server-ab.sh") {
			t.Errorf("%s: the note does not say how to measure the server alone: %q", sc.Name, n)
		}
	}
}
