package matrix

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// The UDP codec rows: SRMP echo round trips of 32 bytes for 1, 4 and 16
// clients, with the flags that make `lifenet load` run the codec over UDP;
// the quick list keeps 17 rows and one of them is a UDP codec row.
func TestUDPCodecScenarios(t *testing.T) {
	var rows []Scenario
	for _, s := range Full() {
		if s.Proto == "udp" && s.Codec != "" {
			rows = append(rows, s)
		}
	}
	var names []string
	for i, s := range rows {
		names = append(names, s.Name)
		want := Scenario{Name: s.Name, Mode: "roundtrip", Proto: "udp", Size: 32, Clients: []int{1, 4, 16}[min(i, 2)], RecvMode: "sync", Codec: "srmp"}
		if s != want {
			t.Errorf("%s: %+v, want %+v", s.Name, s, want)
		}
	}
	if want := []string{"udp-32B-srmp-serial-1C", "udp-32B-srmp-serial-4C", "udp-32B-srmp-serial-16C"}; !slices.Equal(names, want) {
		t.Fatalf("UDP codec rows %v, want %v", names, want)
	}
	sc := rows[1]
	if got, want := strings.Join(sc.commonArgs(), " "), "--size 32 --udp --codec srmp"; got != want {
		t.Errorf("server/common args %q, want %q", got, want)
	}
	if got, want := strings.Join(sc.clientArgs(), " "), "--size 32 --udp --codec srmp --clients 4 --recvmode sync --mode roundtrip"; got != want {
		t.Errorf("client args %q, want %q", got, want)
	}
	if g := groupName(sc); g != "UDP codec echo, serial requests" {
		t.Errorf("group %q", g)
	}
	if n := notes(pair{sc: sc}, nil); len(n) != 1 || !strings.Contains(n[0], "raw UDP client") {
		t.Errorf("notes %q: want the one on the shared client", n)
	}
}

// A UDP codec row runs end to end in separate processes, lifenet's codec
// server and the baseline's datagram loop each driven by the raw UDP client:
// both produce round trips and a server STEADY line, and the report puts
// the row in its own group.
func TestMatrixRunsUDPCodecRow(t *testing.T) {
	t.Setenv("LIFENET_TEST_AS_CLI", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := Options{Exe: exe, Out: dir, Seconds: 0.6, Warmup: 0, IdleExit: 0.5, ClientProcs: 1, BasePort: 18100}
	list, err := Filter(Full(), "^udp-32B-srmp-serial-4C$")
	if err != nil {
		t.Fatal(err)
	}
	results := Run(context.Background(), opts, list)
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	for _, r := range results {
		c := r.Client
		if r.Error != "" || r.Server == nil || c == nil || c.LatencyCount == 0 || c.MsgsPerSec <= 0 || c.Codec != "srmp" || c.Protocol != "udp" || c.ConnErrors != 0 {
			t.Fatalf("%s/%s: %+v (client %+v)", r.Name, r.Impl, r, c)
		}
		if wantClient := map[string]string{"lifenet": "raw", "raw": ""}[r.Impl]; c.Client != wantClient || c.Impl != r.Impl {
			t.Errorf("%s: client %q impl %q, want the raw client", r.Impl, c.Client, c.Impl)
		}
	}
	var b strings.Builder
	writeVerdict(&b, pairs(results))
	if !strings.Contains(b.String(), "| UDP codec echo, serial requests | 1 |") {
		t.Errorf("summary:\n%s", b.String())
	}
}
