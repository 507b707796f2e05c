package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/transport"
)

// healthy is a report of a clean run: flat samples, back to baseline, and
// every fault accounted for.
func healthy() *Report {
	base := Sample{Goroutines: 8, HeapLive: 1 * mib, FDs: 11}
	r := &Report{Options: Options{Conns: 200}, Baseline: base, Final: base}
	for i := range 12 {
		r.Samples = append(r.Samples, Sample{At: time.Duration(i+1) * time.Second, Goroutines: 810, HeapLive: 40 * mib,
			Buffers: 410, FDs: 411, Sessions: 200, Pending: 3})
	}
	r.Counts.ByKind[EchoRPC], r.Counts.ByKind[EchoCodec] = 1000, 1000
	r.Counts.ByKind[Panicked], r.ServerPanics = 5, 5
	r.Counts.MalformedToCodec, r.CodecClosed[transport.ReasonProtocol] = 2, 2
	r.Counts.MalformedToRPC, r.RPCClosed[transport.ReasonProtocol] = 3, 3
	r.Counts.CodecTimeouts, r.Counts.LateReplies = 10, 9
	return r
}

func TestJudgeNamesWhatFailed(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(r *Report)
		want  []string // one failure each, in order
	}{
		{"clean", func(*Report) {}, nil},
		{"goroutines rising", func(r *Report) {
			for i := range r.Samples {
				r.Samples[i].Goroutines = 800 + 20*i
			}
		}, []string{"goroutines trend upward"}},
		// 5 → 16 pending with 200 connections: a loaded machine, not
		// stuck calls (the limit is 5 + 4 + 5 + 20 = 34).
		{"pending doubling", func(r *Report) {
			for i := range r.Samples {
				r.Samples[i].Pending = 5 + 11*(i/9)
			}
		}, nil},
		{"pending stuck", func(r *Report) {
			for i := range r.Samples {
				r.Samples[i].Pending = 5 + 40*(i/9)
			}
		}, []string{"pending trend upward"}},
		// One request number never given back by idle clients.
		{"pending not drained", func(r *Report) { r.Final.Pending = 1 }, []string{"pending did not return to baseline"}},
		{"heap not back", func(r *Report) { r.Final.HeapLive = 8 * mib }, []string{"heap did not return to baseline"}},
		{"buffers rising and not back", func(r *Report) {
			for i := range r.Samples {
				r.Samples[i].Buffers = 400 + 10*i
			}
			r.Final.Buffers = 3
		}, []string{"buffers trend upward", "buffers did not return to baseline"}},
		{"fds not counted", func(r *Report) {
			r.Baseline.FDs, r.Final.FDs = -1, 50
			for i := range r.Samples {
				r.Samples[i].FDs = -1
			}
		}, nil},
		{"unexpected errors", func(r *Report) {
			r.Counts.ByKind[WrongReply], r.Counts.First[WrongReply] = 2, "reply of 64 bytes to a request of 4096"
		}, []string{"2 × wrong reply (first: reply of 64 bytes"}},
		{"panics uncounted", func(r *Report) { r.ServerPanics = 4 }, []string{"panics: the rpc server counted 4"}},
		{"malformed not closed", func(r *Report) { r.CodecClosed[transport.ReasonProtocol] = 1 },
			[]string{"malformed frames: the codec server closed 1"}},
		{"rpc malformed not closed", func(r *Report) { r.RPCClosed[transport.ReasonProtocol] = 2 },
			[]string{"malformed frames: the rpc server closed 2 connections for protocol errors, 3 bad frames"}},
		{"rpc closes a frame too many", func(r *Report) { r.RPCClosed[transport.ReasonProtocol] = 4 },
			[]string{"malformed frames: the rpc server closed 4"}},
		{"late replies unexplained", func(r *Report) { r.Counts.LateReplies = 11 }, []string{"dropped 11 replies matching no request"}},
		{"slow consumers", func(r *Report) { r.CodecClosed[transport.ReasonSlowConsumer] = 1 }, []string{"codec server closed 1 connections with reason slow consumer"}},
		{"rpc idle closes", func(r *Report) { r.RPCClosed[transport.ReasonIdle] = 2 }, []string{"rpc server closed 2 connections with reason idle"}},
		{"buffers after close", func(r *Report) { r.BuffersAtClose = 7 }, []string{"7 pooled buffers still outstanding"}},
		{"no echo", func(r *Report) { r.Counts.ByKind[EchoRPC], r.Counts.ByKind[EchoCodec] = 0, 0 }, []string{"no echo call succeeded"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := healthy()
			c.spoil(r)
			judge(r)
			if len(r.Failures) != len(c.want) {
				t.Fatalf("failures %q, want %d naming %q", r.Failures, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(r.Failures[i], w) {
					t.Errorf("failure %q does not name %q", r.Failures[i], w)
				}
			}
			if r.Passed() != (len(c.want) == 0) {
				t.Errorf("Passed() = %v with failures %q", r.Passed(), r.Failures)
			}
		})
	}
}
