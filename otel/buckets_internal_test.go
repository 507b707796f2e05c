package otel

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// bucketIndex.bucket agrees with a search of the boundaries (the first
// boundary >= v) for every boundary, its neighbours and random values, in
// both of CallMetrics' scales.
func TestBucketIndexAgreesWithSearch(t *testing.T) {
	for _, at := range [][]int64{nanos(DefaultDurationBuckets), sizeBounds.at, {5}, {0, 1, 2, 3, 4, 1 << 40}} {
		b := newBucketIndex(at)
		want := func(v int64) int { return sort.Search(len(at), func(i int) bool { return at[i] >= max(v, 0) }) }
		check := func(v int64) {
			if got, w := b.bucket(v), want(v); got != w {
				t.Fatalf("bounds %v: bucket(%d) = %d, want %d", at, v, got, w)
			}
		}
		for _, x := range at {
			check(x - 1)
			check(x)
			check(x + 1)
		}
		for _, v := range []int64{math.MinInt64, -1, 0, 1, math.MaxInt64} {
			check(v)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 100000 {
			check(r.Int64N(1 << uint(r.IntN(63))))
		}
	}
}
