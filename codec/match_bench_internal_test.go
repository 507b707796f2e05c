package codec

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkMatcherAsyncRoundTrip: the matching of one asynchronous
// request, from register to its reply's callback, with others in flight:
// the cost of choosing a sequence number (scripts/instrs.sh counts it).
func BenchmarkMatcherAsyncRoundTrip(b *testing.B) {
	for _, inFlight := range []int{1, 64, 254} {
		b.Run(fmt.Sprintf("in-flight=%d", inFlight), func(b *testing.B) {
			m := newMatcher(false, 0)
			m.sweeper = true // none runs: its ticks would be counted too
			m.clock.Store(1)
			defer m.close(nil)
			cb := &callback{msg: func(*Message, error) {}}
			reply := &Message{Kind: KindReply}
			take := func() int {
				k, _, _, err := m.register(context.Background(), cb, nil)
				if err != nil {
					b.Fatal(err)
				}
				return k
			}
			keys := make([]int, inFlight)
			for i := range keys {
				keys[i] = take()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				j := i % len(keys)
				m.deliver(keys[j], reply)
				keys[j] = take()
			}
		})
	}
}
