// Package fleet is `lifenet fleet`: a client that opens and holds many
// connections to one server, each making a call on connect and a
// heartbeat call at a fixed period, so that the server's memory and CPU
// per held connection can be measured (docs/perf/connections.md).
//
// Its own cost per connection is small so as not to blur that
// measurement: on Linux a few event-loop goroutines drive non-blocking
// sockets through epoll, each connection a struct of 40 bytes in a slice,
// each loop one shared read buffer; elsewhere a goroutine per connection
// does the same, at a few kilobytes each.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Protocols a fleet speaks.
const (
	ProtoSRMP = "srmp" // an RPC call of Config.Action on connect and per heartbeat
	ProtoEcho = "echo" // 32 bytes sent, the same 32 expected back
)

// Defaults and bounds (a zero Config field takes its default).
const (
	DefaultAction      = "Bench/NoArg"
	DefaultBurstAction = "Bench/EchoPacket"
	DefaultHeartbeat   = 10 * time.Second
	DefaultInFlight    = 256
	DefaultIdle        = 10 * time.Second
	DefaultTimeout     = 10 * time.Second
	BurstSamples       = 5 // RSS samples after the burst, a second apart
	// FileSlack is the descriptors a fleet process needs besides its
	// connections (stdio, epoll, the runtime's).
	FileSlack = 32
)

// ErrConfig is a Config that cannot run.
var ErrConfig = errors.New("fleet: bad configuration")

// Config is a fleet run. The zero value of a field is its default.
type Config struct {
	Remote      string        // the server, HOST:PORT
	Conns       int           // connections to open and hold
	Sources     []netip.Addr  // local addresses to bind, round-robin; none: the kernel picks
	Proto       string        // ProtoSRMP (default) or ProtoEcho
	Action      string        // srmp: the action called on connect and per heartbeat (DefaultAction)
	BurstAction string        // srmp: the action of the burst (DefaultBurstAction)
	Heartbeat   time.Duration // a connection's heartbeat period (DefaultHeartbeat)
	Duration    time.Duration // how long the connections are held after the ramp (0: not at all)
	Ramp        int           // connections opened per second; 0: as fast as the server accepts
	InFlight    int           // connects, first calls and bursts in progress at once (DefaultInFlight)
	Burst       int           // bytes of the one message each connection sends after the idle pause; 0: none
	Idle        time.Duration // the pause after the ramp before the "idle" sample (DefaultIdle, at most Duration)
	Timeout     time.Duration // a connect's or a reply's limit (DefaultTimeout)
	ServerPIDs  []int         // server processes whose RSS and CPU are sampled (Linux)
	Progress    io.Writer     // a progress line each second; nil: none
}

func (c *Config) defaults() {
	if c.Proto == "" {
		c.Proto = ProtoSRMP
	}
	if c.Action == "" {
		c.Action = DefaultAction
	}
	if c.BurstAction == "" {
		c.BurstAction = DefaultBurstAction
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.InFlight == 0 {
		c.InFlight = DefaultInFlight
	}
	if c.Idle == 0 {
		c.Idle = DefaultIdle
	}
	c.Idle = min(c.Idle, c.Duration)
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

func (c *Config) validate() error {
	switch {
	case c.Conns < 1:
		return fmt.Errorf("%w: Conns %d, want at least 1", ErrConfig, c.Conns)
	case c.Proto != ProtoSRMP && c.Proto != ProtoEcho:
		return fmt.Errorf("%w: Proto %q, want srmp or echo", ErrConfig, c.Proto)
	case !ValidAction(c.Action) || !ValidAction(c.BurstAction):
		return fmt.Errorf("%w: an action wants 1 to 127 printable ASCII bytes", ErrConfig)
	case c.Heartbeat < time.Millisecond || c.Duration < 0 || c.Ramp < 0 || c.InFlight < 0 ||
		c.Burst < 0 || c.Burst > maxFrame/2 || c.Idle < 0 || c.Timeout < 0:
		return fmt.Errorf("%w: a duration, rate or size out of range", ErrConfig)
	}
	return nil
}

// resolve returns the server's address: Remote as IP:PORT, or its host
// looked up.
func (c *Config) resolve() (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(c.Remote)
	if err != nil {
		a, rerr := net.ResolveTCPAddr("tcp", c.Remote)
		if rerr != nil {
			return ap, fmt.Errorf("%w: Remote %q: want HOST:PORT (%v)", ErrConfig, c.Remote, rerr)
		}
		ap = a.AddrPort()
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	for _, s := range c.Sources {
		if s.Is4() != ap.Addr().Is4() {
			return ap, fmt.Errorf("%w: source %v and server %v are not of one IP family", ErrConfig, s, ap.Addr())
		}
	}
	return ap, nil
}

// Report is what a run measured. Sizes are bytes, times are in the unit
// their name says.
type Report struct {
	Remote      string   `json:"remote"`
	Proto       string   `json:"proto"`
	Conns       int      `json:"conns"`
	Sources     []string `json:"sources,omitempty"`
	Heartbeat   string   `json:"heartbeat"`
	Interrupted bool     `json:"interrupted,omitempty"` // SIGINT or SIGTERM: the figures are of what ran

	Held         int64   `json:"held"`     // connections held at the end
	EverHeld     int64   `json:"everHeld"` // connections whose first call was answered
	Refused      int64   `json:"refused"`  // refused: connection refused, or closed by the server before the first reply
	Failed       int64   `json:"failed"`   // never held for another reason (a timeout, no free port, …)
	Lost         int64   `json:"lost"`     // held, then closed by the server or broken
	FirstRefused string  `json:"firstRefused,omitempty"`
	FirstFailed  string  `json:"firstFailed,omitempty"`
	FirstLost    string  `json:"firstLost,omitempty"`
	RampSeconds  float64 `json:"rampSeconds"`

	Heartbeats     int64   `json:"heartbeats"` // heartbeat calls answered
	Skipped        int64   `json:"skipped"`    // heartbeats not sent: the previous call was still waiting
	CallErrors     int64   `json:"callErrors"` // error replies
	FirstCallError string  `json:"firstCallError,omitempty"`
	Unexpected     int64   `json:"unexpected"` // replies (or echoed bytes) that answer nothing
	Bursts         int64   `json:"bursts"`     // burst messages answered
	RTTP50         float64 `json:"rttP50Ms"`   // heartbeat round trips
	RTTP99         float64 `json:"rttP99Ms"`
	RTTMax         float64 `json:"rttMaxMs"`

	Server *ServerReport `json:"server,omitempty"`
	Self   MemReport     `json:"self"` // this process
}

// MemReport is a process's (or several's) RSS before the connections
// were opened and after the ramp and the idle pause, and the growth per
// held connection.
type MemReport struct {
	RSSBefore    int64   `json:"rssBefore"`
	RSSIdle      int64   `json:"rssIdle"`
	HeldIdle     int64   `json:"heldIdle"` // connections held at the idle sample
	BytesPerConn float64 `json:"bytesPerConn"`
	Error        string  `json:"error,omitempty"` // why it was not measured
}

// ServerReport is what was read of the server processes (--server-pid).
type ServerReport struct {
	PIDs []int `json:"pids"`
	MemReport
	AfterBurst    []Sample `json:"afterBurst,omitempty"` // a sample a second after the burst, BurstSamples of them
	CPUSeconds    float64  `json:"cpuSeconds"`           // utime+stime over the heartbeat window
	CPUHeartbeats int64    `json:"cpuHeartbeats"`        // heartbeats answered in that window
	CPUPerBeatUs  float64  `json:"cpuPerHeartbeatUs"`
}

// Sample is one RSS reading after the burst.
type Sample struct {
	AfterSeconds float64 `json:"afterSeconds"`
	RSS          int64   `json:"rss"`
	Held         int64   `json:"held"`
	BytesPerConn float64 `json:"bytesPerConn"`
}

// conn is one connection's state: kept small (40 bytes), since the fleet
// holds tens of thousands. An event loop owns it.
type conn struct {
	fd     int32 // Linux: the socket
	state  uint8 // stConnecting …
	seq    uint8 // srmp: the sequence number of the last call sent
	msg    uint8 // the message being sent or awaited: msgHello …
	flags  uint8 // fPending …
	hdr    [8]byte
	hdrN   uint8 // srmp: header bytes read of the frame being read
	_      byte
	src    uint16 // its source address: an index into Config.Sources
	remain uint32 // srmp: payload bytes of the frame still to read; echo: bytes still to come back
	wOff   uint32 // bytes of the message being sent already written
	sentAt int64  // ns since the fleet began: the pending call's sending, or the connect's start
}

const (
	stConnecting = iota // connect in progress
	stHello             // connected, the first call in flight
	stHeld              // the first call answered
	stClosed
)

const (
	msgHello = iota
	msgBeat
	msgBurst
)

const (
	fPending = 1 << iota // a call awaits its reply
	fWriting             // the message is not all written: EPOLLOUT wanted
	fOut                 // EPOLLOUT is registered
	fBody                // srmp: reading a frame's payload
)

// fleet is a run's shared state: the counters the loops update and the
// controller reads.
type fleet struct {
	cfg    Config
	remote netip.AddrPort
	start  time.Time
	hello  []byte // the first call's (and each heartbeat's) bytes
	burst  []byte // the burst's bytes

	next     atomic.Int64 // the next connection to open
	allowed  atomic.Int64 // connections the ramp allows so far
	inflight atomic.Int64 // connects and first calls in progress
	stop     atomic.Bool
	fatal    atomic.Pointer[error]

	held, everHeld, refused, failed, lost atomic.Int64
	beats, skipped, callErrs, unexpected  atomic.Int64
	firstRefused, firstFailed, firstLost  atomic.Pointer[string]
	firstCallErr                          atomic.Pointer[string]

	burstOn       atomic.Bool  // the burst has begun
	burstInflight atomic.Int64 // bursts sent and not answered
	bursts        atomic.Int64 // bursts answered
	loopsBurstEnd atomic.Int64 // loops that have sent every burst and have none in flight

	rtt histogram
}

func newFleet(cfg Config) *fleet {
	f := &fleet{cfg: cfg, start: time.Now()}
	if cfg.Proto == ProtoEcho {
		f.hello = echoHello
		f.burst = filler(cfg.Burst)
	} else {
		f.hello = srmpCall(cfg.Action, nil)
		f.burst = srmpCall(cfg.BurstAction, filler(cfg.Burst))
	}
	return f
}

// now is the time since the fleet began, in nanoseconds.
func (f *fleet) now() int64 { return int64(time.Since(f.start)) }

// first records text in p if p holds nothing yet; text is called only
// then, so that a failure past the first formats nothing.
func first(p *atomic.Pointer[string], text func() string) {
	if p.Load() == nil {
		s := text()
		p.CompareAndSwap(nil, &s)
	}
}

func load(p *atomic.Pointer[string]) string {
	if s := p.Load(); s != nil {
		return *s
	}
	return ""
}

// resolved is the connections whose opening has ended, held or not.
func (f *fleet) resolved() int64 {
	return f.everHeld.Load() + f.refused.Load() + f.failed.Load()
}

// reply handles a whole reply to c at now: it returns false when c is to
// be closed (its first call failed) with the error text.
func (f *fleet) reply(c *conn, isErr bool, errText func() string, now int64) (ok bool, why string) {
	c.flags &^= fPending
	if isErr {
		f.callErrs.Add(1)
		first(&f.firstCallErr, errText)
	}
	switch c.msg {
	case msgHello:
		if isErr {
			return false, "the first call got " + errText()
		}
		c.state = stHeld
		f.inflight.Add(-1)
		f.held.Add(1)
		f.everHeld.Add(1)
	case msgBeat:
		if !isErr {
			f.beats.Add(1)
		}
		f.rtt.add(uint64(max(now-c.sentAt, 0)) / 1000)
	case msgBurst:
		f.burstInflight.Add(-1)
		f.bursts.Add(1)
	}
	return true, ""
}

// closed counts c's end by err (nil: the fleet closed it) in the state
// it was in, from source src.
func (f *fleet) closed(c *conn, src string, err error, refused bool, now int64) {
	switch c.state {
	case stConnecting, stHello:
		f.inflight.Add(-1)
		if refused {
			f.refused.Add(1)
			first(&f.firstRefused, func() string { return fmt.Sprintf("%s→%s: %v", src, f.cfg.Remote, err) })
		} else {
			f.failed.Add(1)
			first(&f.firstFailed, func() string { return fmt.Sprintf("%s→%s: %v", src, f.cfg.Remote, err) })
		}
	case stHeld:
		f.held.Add(-1)
		f.lost.Add(1)
		first(&f.firstLost, func() string {
			return fmt.Sprintf("%s→%s: %v (%.1f s into the run)", src, f.cfg.Remote, err, float64(now)/1e9)
		})
		if c.msg == msgBurst && c.flags&fPending != 0 {
			f.burstInflight.Add(-1)
		}
	}
	c.state = stClosed
	c.flags = 0
}

// errNoReply is a call (or a connect) not answered within Config.Timeout.
type errNoReply time.Duration

func (e errNoReply) Error() string { return "no reply in " + time.Duration(e).String() }

// Run opens cfg.Conns connections, holds them for cfg.Duration, and
// reports what it measured. Cancelling ctx ends the run early: the
// report is of what ran (Interrupted). The error is for a run that could
// not start or whose event loop broke (the report still says what ran).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	remote, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	f := newFleet(cfg)
	f.remote = remote
	r := &Report{Remote: cfg.Remote, Proto: cfg.Proto, Conns: cfg.Conns, Heartbeat: cfg.Heartbeat.String()}
	for _, a := range cfg.Sources {
		r.Sources = append(r.Sources, a.String())
	}
	var pids []string
	if len(cfg.ServerPIDs) > 0 {
		r.Server = &ServerReport{PIDs: cfg.ServerPIDs}
		for _, p := range cfg.ServerPIDs {
			pids = append(pids, strconv.Itoa(p))
		}
	}
	self := []string{"self"}
	mem := func(m *MemReport, p []string, before bool) {
		v, err := rss(p)
		if err != nil {
			m.Error = err.Error()
			return
		}
		if before {
			m.RSSBefore = v
			return
		}
		m.RSSIdle, m.HeldIdle = v, f.held.Load()
		if m.HeldIdle > 0 && m.Error == "" {
			m.BytesPerConn = float64(v-m.RSSBefore) / float64(m.HeldIdle)
		}
	}
	if r.Server != nil {
		mem(&r.Server.MemReport, pids, true)
	}
	mem(&r.Self, self, true)

	stopLoops, loops, err := startLoops(f)
	if err != nil {
		return nil, err
	}
	c := &clock{ctx: ctx, f: f}
	defer func() {
		f.stop.Store(true)
		stopLoops()
	}()
	// The ramp.
	if cfg.Ramp == 0 {
		f.allowed.Store(int64(cfg.Conns))
	}
	c.phase = "ramp"
	for f.resolved() < int64(cfg.Conns) && c.tick() {
		if cfg.Ramp > 0 {
			f.allowed.Store(min(int64(cfg.Conns), 1+int64(time.Since(f.start).Seconds()*float64(cfg.Ramp))))
		}
	}
	r.RampSeconds = time.Since(f.start).Seconds()
	rampEnd := time.Now()
	cpu0, cpuErr := cpuSeconds(pids)
	beats0 := f.beats.Load()
	cpuWindow := func() {
		if r.Server == nil || r.Server.CPUHeartbeats != 0 || cpuErr != nil {
			return
		}
		cpu1, err := cpuSeconds(pids)
		if err != nil {
			cpuErr = err
			return
		}
		r.Server.CPUSeconds, r.Server.CPUHeartbeats = cpu1-cpu0, f.beats.Load()-beats0
		if r.Server.CPUHeartbeats > 0 {
			r.Server.CPUPerBeatUs = r.Server.CPUSeconds * 1e6 / float64(r.Server.CPUHeartbeats)
		}
	}
	// The idle pause, then the idle sample.
	c.phase = "hold"
	if c.until(rampEnd.Add(cfg.Idle)) {
		if r.Server != nil {
			mem(&r.Server.MemReport, pids, false)
		}
		mem(&r.Self, self, false)
		// The burst, then a sample a second for BurstSamples seconds.
		if cfg.Burst > 0 {
			cpuWindow()
			c.phase = "burst"
			f.burstOn.Store(true)
			for f.loopsBurstEnd.Load() < int64(loops) && c.tick() {
			}
			burstEnd := time.Now()
			c.phase = "after burst"
			for i := 1; i <= BurstSamples && c.until(burstEnd.Add(time.Duration(i)*time.Second)); i++ {
				if r.Server == nil {
					continue
				}
				s := Sample{AfterSeconds: float64(i), Held: f.held.Load()}
				if v, err := rss(pids); err == nil {
					s.RSS = v
					if s.Held > 0 {
						s.BytesPerConn = float64(v-r.Server.RSSBefore) / float64(s.Held)
					}
				}
				r.Server.AfterBurst = append(r.Server.AfterBurst, s)
			}
			c.phase = "hold"
		}
		c.until(rampEnd.Add(cfg.Duration))
	}
	cpuWindow()
	if cpuErr != nil && r.Server != nil {
		r.Server.Error = cpuErr.Error()
	}
	f.stop.Store(true)
	stopLoops()
	stopLoops = func() {}
	r.Interrupted = ctx.Err() != nil
	r.Held, r.EverHeld = f.held.Load(), f.everHeld.Load()
	r.Refused, r.Failed, r.Lost = f.refused.Load(), f.failed.Load(), f.lost.Load()
	r.FirstRefused, r.FirstFailed, r.FirstLost = load(&f.firstRefused), load(&f.firstFailed), load(&f.firstLost)
	r.Heartbeats, r.Skipped, r.CallErrors, r.Unexpected = f.beats.Load(), f.skipped.Load(), f.callErrs.Load(), f.unexpected.Load()
	r.FirstCallError = load(&f.firstCallErr)
	r.Bursts = f.bursts.Load()
	r.RTTP50, r.RTTP99 = f.rtt.quantile(0.5, nil)/1000, f.rtt.quantile(0.99, nil)/1000
	r.RTTMax = float64(f.rtt.max.Load()) / 1000
	if p := f.fatal.Load(); p != nil {
		return r, *p
	}
	return r, nil
}

// clock paces the controller: tick waits a little and prints the
// progress line each second; both return false once the run is to end
// (ctx done, an event loop broken).
type clock struct {
	ctx      context.Context
	f        *fleet
	phase    string
	lastLine time.Time
	lastBeat int64
	lastHist []uint64
	once     sync.Once
}

func (c *clock) tick() bool {
	c.once.Do(func() { c.lastLine = time.Now(); c.lastHist = c.f.rtt.snapshot() })
	t := time.NewTimer(20 * time.Millisecond)
	select {
	case <-c.ctx.Done():
		t.Stop()
		return false
	case <-t.C:
	}
	if c.f.fatal.Load() != nil {
		return false
	}
	if el := time.Since(c.lastLine); el >= time.Second {
		f := c.f
		beats := f.beats.Load()
		fmt.Fprintf(f.cfg.Progress, "fleet %5.1fs %-11s held %d refused %d failed %d lost %d  hb/s %.0f  p99 %.2f ms\n",
			time.Since(f.start).Seconds(), c.phase, f.held.Load(), f.refused.Load(), f.failed.Load(), f.lost.Load(),
			float64(beats-c.lastBeat)/el.Seconds(), f.rtt.quantile(0.99, c.lastHist)/1000)
		c.lastLine, c.lastBeat, c.lastHist = time.Now(), beats, f.rtt.snapshot()
	}
	return true
}

// until ticks until t: false when the run is to end first.
func (c *clock) until(t time.Time) bool {
	for time.Now().Before(t) {
		if !c.tick() {
			return false
		}
	}
	return c.ctx.Err() == nil && c.f.fatal.Load() == nil
}
