package etcd

import (
	"strings"
	"testing"
	"time"
)

// Values whose address a client cannot dial are skipped like values that
// are not endpoints: each logged once (its line short, a 100 KB address
// cut), never reported; a valid key beside them is, and its changes log
// nothing about them.
func TestResolverSkipsUndialableAddresses(t *testing.T) {
	checkLeaks(t)
	srv := startEtcd(t)
	cli := newClient(t, srv.endpoint())
	ctx := ctxT(t)
	bad := map[string]string{
		"unix":  `{"addr":"unix:///etc/passwd"}`,
		"udp":   `{"addr":"udp://"}`,
		"ws":    `{"addr":"ws://"}`,
		"empty": `{"addr":""}`,
		"huge":  `{"addr":"` + strings.Repeat("a", 100<<10) + `"}`,
		"list":  `{"addr":"a:1,b:2"}`,
		"port0": `{"addr":"tcp://a:0"}`,
	}
	for k, v := range bad {
		if _, err := cli.Put(ctx, "/lifenet/services/calc/"+k, v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/lifenet/services/calc/good", `{"addr":"good:1"}`); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	rec := watchResolver(t, newResolver(t, cli, "calc", ResolverConfig{Logger: logs.logger(), Debounce: -1}))
	rec.await(t, 5*time.Second, "good:1")
	// Events of the valid key: the invalid ones are not logged again.
	for i := range 3 {
		if _, err := cli.Put(ctx, "/lifenet/services/calc/good", `{"addr":"good:1","weight":`+string(rune('2'+i))+`}`); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.all()) < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := logs.String()
	for k := range bad {
		if n := strings.Count(out, "key=/lifenet/services/calc/"+k+" "); n != 1 {
			t.Errorf("%d log lines for the invalid key %s, want 1", n, k)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 2048 {
			t.Errorf("a log line of %d bytes", len(l))
		}
	}
	for _, set := range rec.all() {
		for _, ep := range set {
			if ep.Addr != "good:1" {
				t.Errorf("reported %q", ep.Addr[:min(len(ep.Addr), 64)])
			}
		}
	}
}
