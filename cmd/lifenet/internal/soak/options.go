package soak

import (
	"fmt"
	"log/slog"
	"time"
)

// Options are one soak run. Zero fields take the defaults below.
type Options struct {
	Duration    time.Duration // the load phase (default 2 min)
	Conns       int           // client connections, half rpc.Client and half codec.Client (default 200)
	Interval    time.Duration // pacing: each connection starts one operation per Interval (default 100 ms)
	SampleEvery time.Duration // time between samples (default 5 s)
	Settle      time.Duration // how long the drain waits for the metrics to return to baseline (default 15 s)
	Seed        uint64        // seeds the operations' random choices

	// Fault mix, as fractions of operations.
	MalformedRate float64 // a raw connection sends a bad SRMP frame and must be closed (default 0.001)
	TimeoutRate   float64 // a call to the slow action with a short deadline (default 0.01)
	PanicRate     float64 // of RPC operations: a call to the panicking action (default 0.005)
	ChurnFraction float64 // connections that close and redial periodically (default 0.2)
	ChurnEvery    int     // operations between a churning connection's redials (default 50)

	CallTimeout time.Duration // the short deadline of timeout calls (default 50 ms)
	SlowFor     time.Duration // how long the slow action holds a call (default 500 ms)

	// ServerLog receives both servers' log lines: among them a Warn line
	// for each connection closed for an injected fault ("protocol
	// violation"), hundreds in a passing run. Nil discards them (the
	// servers' Stats count every close); `lifenet soak --verbose` sets it.
	ServerLog *slog.Logger
}

// Defaults.
const (
	DefaultDuration    = 2 * time.Minute
	DefaultConns       = 200
	DefaultInterval    = 100 * time.Millisecond
	DefaultSampleEvery = 5 * time.Second
	DefaultSettle      = 15 * time.Second
	DefaultCallTimeout = 50 * time.Millisecond
	DefaultSlowFor     = 500 * time.Millisecond
)

// Payload sizes and their shares of echo calls (the rest are 64 B).
const (
	sizeSmall  = 64
	sizeMedium = 4 << 10
	sizeLarge  = 256 << 10

	shareLarge  = 0.05
	shareMedium = 0.20
)

func (o *Options) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Duration, DefaultDuration)
	def(&o.Interval, DefaultInterval)
	def(&o.SampleEvery, DefaultSampleEvery)
	def(&o.Settle, DefaultSettle)
	def(&o.CallTimeout, DefaultCallTimeout)
	def(&o.SlowFor, DefaultSlowFor)
	if o.Conns == 0 {
		o.Conns = DefaultConns
	}
	if o.MalformedRate == 0 {
		o.MalformedRate = 0.001
	}
	if o.TimeoutRate == 0 {
		o.TimeoutRate = 0.01
	}
	if o.PanicRate == 0 {
		o.PanicRate = 0.005
	}
	if o.ChurnFraction == 0 {
		o.ChurnFraction = 0.2
	}
	if o.ChurnEvery == 0 {
		o.ChurnEvery = 50
	}
}

func (o *Options) validate() error {
	switch {
	case o.Conns < 2:
		return fmt.Errorf("soak: Conns %d: want at least 2 (one of each client kind)", o.Conns)
	case o.SlowFor <= o.CallTimeout:
		return fmt.Errorf("soak: SlowFor %v must exceed CallTimeout %v, or timeout calls would not time out", o.SlowFor, o.CallTimeout)
	case o.MalformedRate+o.TimeoutRate+o.PanicRate >= 1:
		return fmt.Errorf("soak: fault rates add up to %g: want less than 1", o.MalformedRate+o.TimeoutRate+o.PanicRate)
	}
	return nil
}

// rpcConns is how many of the connections are rpc.Clients: every other one.
func (o *Options) rpcConns() int { return (o.Conns + 1) / 2 }
