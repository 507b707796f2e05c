package soak

import (
	"sync"
	"sync/atomic"
)

// Kind names what an operation came to. The expected kinds are the
// successful calls and the injected faults behaving as injected; every
// other kind is a failure of the run.
type Kind int

// Operation outcomes.
const (
	EchoRPC        Kind = iota // an RPC echo answered with its payload
	EchoCodec                  // an SRMP echo answered with its payload
	Timeout                    // a timeout call timed out (expected)
	Panicked                   // a call to the panicking action got a 500 (expected)
	MalformedShut              // a malformed frame's connection was closed by the server (expected)
	Redial                     // a churning connection closed and dialled again
	WrongReply                 // unexpected: a reply whose payload is not the request's
	CallError                  // unexpected: an error from a call that should have succeeded
	SlowAnswered               // unexpected: a timeout call was answered in time
	PanicAnswered              // unexpected: a call to the panicking action did not get a 500
	MalformedAlive             // unexpected: the server did not close a connection that sent a bad frame
	DialError                  // unexpected: a dial or redial failed
	numKinds
)

var kindNames = [numKinds]string{
	EchoRPC: "rpc echo", EchoCodec: "codec echo", Timeout: "timeout", Panicked: "panic",
	MalformedShut: "malformed closed", Redial: "redial",
	WrongReply: "wrong reply", CallError: "call error", SlowAnswered: "slow call answered",
	PanicAnswered: "panic not reported", MalformedAlive: "malformed not closed", DialError: "dial error",
}

func (k Kind) String() string { return kindNames[k] }

// Expected reports whether k is a normal outcome or an injected fault
// behaving as injected.
func (k Kind) Expected() bool { return k <= Redial }

// counters are the run's outcome counts, updated by every worker.
type counters struct {
	n          [numKinds]atomic.Int64
	bySize     [3]atomic.Int64 // echoes by payload size: 64 B, 4 KiB, 256 KiB
	malformedC atomic.Int64    // malformed frames aimed at the codec server (its protocol closes must match)
	malformedR atomic.Int64    // the same for the rpc server
	unknown    atomic.Int64    // replies the codec clients' matchers dropped (late replies to timed-out requests)
	timeoutC   atomic.Int64    // timeouts of codec clients

	mu    sync.Mutex
	first [numKinds]string // the first error of each unexpected kind
}

func (c *counters) add(k Kind, err error) {
	c.n[k].Add(1)
	if err != nil && !k.Expected() {
		c.mu.Lock()
		if c.first[k] == "" {
			c.first[k] = err.Error()
		}
		c.mu.Unlock()
	}
}

func (c *counters) calls() int64 {
	var t int64
	for k := range numKinds {
		if k != Redial {
			t += c.n[k].Load()
		}
	}
	return t
}

func (c *counters) unexpected() int64 {
	var t int64
	for k := range numKinds {
		if !k.Expected() {
			t += c.n[k].Load()
		}
	}
	return t
}

// Counts is a snapshot of the outcome counts.
type Counts struct {
	ByKind           [numKinds]int64
	BySize           [3]int64         // echoes of 64 B, 4 KiB and 256 KiB
	First            [numKinds]string // the first error of each unexpected kind
	MalformedToCodec int64            // malformed frames sent to the codec server
	MalformedToRPC   int64            // malformed frames sent to the rpc server
	LateReplies      int64            // replies the codec clients dropped as matching no pending request
	CodecTimeouts    int64            // timeouts of codec clients (each may bring one late reply)
}

func (c *counters) snapshot() Counts {
	var s Counts
	for k := range numKinds {
		s.ByKind[k] = c.n[k].Load()
	}
	for i := range s.BySize {
		s.BySize[i] = c.bySize[i].Load()
	}
	s.MalformedToCodec = c.malformedC.Load()
	s.MalformedToRPC = c.malformedR.Load()
	s.LateReplies = c.unknown.Load()
	s.CodecTimeouts = c.timeoutC.Load()
	c.mu.Lock()
	s.First = c.first
	c.mu.Unlock()
	return s
}
