// Package mono is the library's clock for instants that are stored and
// compared later (partial-frame ages, request deadlines, idle sessions): a
// count of nanoseconds on the monotonic clock. Wall time can step (NTP, a
// virtual machine resuming, an operator); a timeout measured on it would
// fire early, or late, by the size of the step.
//
// Readings fit an atomic.Int64 and are positive, so 0 can mean "no
// instant"; inside a testing/synctest bubble, whose fake time has no
// monotonic reading, they are negative, still distinct and still ordered.
// They mean nothing outside this process.
package mono

import "time"

// epoch is an hour before the package loaded: every reading is positive.
// It carries a monotonic reading, so Of compares monotonic readings.
var epoch = time.Now().Add(-time.Hour)

// Now reads the clock: the monotonic clock alone (time.Now reads the wall
// clock as well, a second clock read; time.Since a monotonic time reads
// one, and inside a bubble the fake clock).
func Now() int64 { return int64(time.Since(epoch)) }

// Of returns the reading of t, which must carry a monotonic reading (as
// time.Now's and a ticker's values do); a time without one is compared by
// its wall clock.
func Of(t time.Time) int64 { return int64(t.Sub(epoch)) }

// Time returns the instant of a reading as a time.Time: the current time
// less the reading's age. Its wall clock is today's (a wall-clock step
// since the package loaded does not shift it), and it carries a monotonic
// reading, so that a deadline set from it is kept on the monotonic clock.
func Time(ns int64) time.Time {
	now := time.Now()
	return now.Add(time.Duration(ns - Of(now)))
}
