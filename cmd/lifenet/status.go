package main

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// The /status page's figures over the last minute: per action, the calls
// of each of the last 60 seconds in a log-scale latency histogram (8
// buckets per doubling from 1 µs: a quantile's error is under 9 %).
const (
	statusWindow  = 60
	bucketsPerDbl = 8
	numBuckets    = 28 * bucketsPerDbl // 1 µs to 2^28 µs (4.5 min)
)

type secSlot struct {
	sec     atomic.Int64 // the Unix second the slot counts
	mu      sync.Mutex   // taken only to reset the slot for a new second
	calls   atomic.Uint64
	errors  atomic.Uint64
	buckets [numBuckets]atomic.Uint32
}

type actionStats struct{ slots [statusWindow]secSlot }

func bucketOf(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us <= 1 {
		return 0
	}
	b := int(math.Log2(us) * bucketsPerDbl)
	return min(b, numBuckets-1)
}

// bucketValue is a bucket's middle (geometric), in microseconds.
func bucketValue(b int) float64 { return math.Exp2((float64(b) + 0.5) / bucketsPerDbl) }

func (a *actionStats) record(now time.Time, d time.Duration, failed bool) {
	sec := now.Unix()
	s := &a.slots[sec%statusWindow]
	if s.sec.Load() != sec {
		s.mu.Lock()
		if s.sec.Load() != sec {
			s.calls.Store(0)
			s.errors.Store(0)
			for i := range s.buckets {
				s.buckets[i].Store(0)
			}
			s.sec.Store(sec)
		}
		s.mu.Unlock()
	}
	s.calls.Add(1)
	if failed {
		s.errors.Add(1)
	}
	s.buckets[bucketOf(d)].Add(1)
}

// window sums the slots of the last statusWindow seconds, now's (the
// current, partial one) included.
func (a *actionStats) window(now int64) (calls, errs uint64, hist [numBuckets]uint64) {
	for i := range a.slots {
		s := &a.slots[i]
		if sec := s.sec.Load(); sec <= now-statusWindow || sec > now {
			continue
		}
		calls += s.calls.Load()
		errs += s.errors.Load()
		for b := range s.buckets {
			hist[b] += uint64(s.buckets[b].Load())
		}
	}
	return
}

func quantile(hist *[numBuckets]uint64, n uint64, q float64) float64 {
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for b, c := range hist {
		seen += c
		if seen >= rank {
			return bucketValue(b)
		}
	}
	return bucketValue(numBuckets - 1)
}

// statusRecorder keeps what /status shows: an interceptor records each
// call's action, time and code, and the protocols of the sessions that
// called.
type statusRecorder struct {
	start    time.Time
	srv      *rpc.Server
	actions  sync.Map // action name → *actionStats
	sessions sync.Map // session ID → rpc.Protocol
}

type seenKey struct{}

func newStatusRecorder() *statusRecorder { return &statusRecorder{start: time.Now()} }

func (r *statusRecorder) intercept(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
	start := time.Now()
	err := next(ctx, c)
	name := c.Action()
	if rpc.CodeOf(err) == rpc.CodeNotFound {
		name = "_OTHER"
	}
	a, ok := r.actions.Load(name)
	if !ok {
		a, _ = r.actions.LoadOrStore(name, new(actionStats))
	}
	now := time.Now()
	a.(*actionStats).record(now, now.Sub(start), err != nil)
	if ss := c.Info().Session(); ss != nil {
		if _, seen := ss.Get(seenKey{}); !seen {
			ss.Set(seenKey{}, true)
			r.sessions.Store(ss.ID(), ss.Protocol())
		}
	}
	return err
}

// Status is the /status page (nats /varz's manner: one JSON object of
// the server's state and its last minute).
type Status struct {
	Server        string                  `json:"server"`
	Version       string                  `json:"version"`
	Start         time.Time               `json:"start"`
	Now           time.Time               `json:"now"`
	Uptime        string                  `json:"uptime"`
	UptimeSeconds float64                 `json:"uptime_seconds"`
	Sessions      int                     `json:"sessions"`
	ByProtocol    map[string]int          `json:"sessions_by_protocol"`
	WindowSeconds float64                 `json:"window_seconds"`
	Calls         uint64                  `json:"calls"`
	CallsPerSec   float64                 `json:"calls_per_sec"`
	Actions       map[string]ActionStatus `json:"actions"`
	Accepted      uint64                  `json:"sessions_accepted"`
	MaxSessions   int64                   `json:"sessions_max"`
	Closed        map[string]uint64       `json:"sessions_closed"`
	BytesIn       uint64                  `json:"bytes_in"`
	BytesOut      uint64                  `json:"bytes_out"`
	Dropped       uint64                  `json:"requests_dropped"`
	Panics        uint64                  `json:"panics"`
}

// ActionStatus is one action's last minute.
type ActionStatus struct {
	Calls       uint64  `json:"calls"`
	Errors      uint64  `json:"errors"`
	CallsPerSec float64 `json:"calls_per_sec"`
	P50Us       float64 `json:"p50_us"`
	P99Us       float64 `json:"p99_us"`
}

func (r *statusRecorder) status(now time.Time) Status {
	up := now.Sub(r.start)
	st := Status{Server: "lifenet", Version: moduleVersion(), Start: r.start.UTC(), Now: now.UTC(),
		Uptime: up.Round(time.Second).String(), UptimeSeconds: up.Seconds(),
		ByProtocol: map[string]int{}, Actions: map[string]ActionStatus{}, Closed: map[string]uint64{}}
	// The window: the last 60 seconds, or the time since the start.
	sec := now.Unix()
	win := min(float64(statusWindow), up.Seconds())
	st.WindowSeconds = win
	r.actions.Range(func(k, v any) bool {
		calls, errs, hist := v.(*actionStats).window(sec)
		a := ActionStatus{Calls: calls, Errors: errs, P50Us: quantile(&hist, calls, 0.50), P99Us: quantile(&hist, calls, 0.99)}
		if win > 0 {
			a.CallsPerSec = float64(calls) / win
		}
		st.Actions[k.(string)] = a
		st.Calls += calls
		return true
	})
	if win > 0 {
		st.CallsPerSec = float64(st.Calls) / win
	}
	if r.srv != nil {
		s, ts := r.srv.Stats(), r.srv.Transport().Stats()
		st.Sessions, st.Accepted, st.MaxSessions = s.Sessions, ts.Accepted, ts.MaxActive
		st.BytesIn, st.BytesOut, st.Dropped, st.Panics = ts.BytesIn, ts.BytesOut, s.Dropped, s.Panics
		for i, n := range ts.Closed {
			if n > 0 {
				st.Closed[transport.Reason(i).String()] = n
			}
		}
		seen := 0
		r.sessions.Range(func(k, v any) bool {
			if _, ok := r.srv.Transport().Session(k.(uint64)); !ok {
				r.sessions.Delete(k)
				return true
			}
			st.ByProtocol[v.(rpc.Protocol).String()]++
			seen++
			return true
		})
		if n := st.Sessions - seen; n > 0 {
			st.ByProtocol["no calls yet"] = n
		}
	}
	return st
}
