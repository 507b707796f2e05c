package loadtest

import (
	"github.com/lifenet/lifenet/internal/cpustat"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"time"

	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Steady is the server's steady-state result (the STEADY line).
type Steady struct {
	MBps         float64 `json:"mbps"` // MiB/s, as NetLoadTest prints "MB/s"
	Gbps         float64 `json:"gbps"`
	PktPerSec    float64 `json:"pktps"`
	FramesPerSec float64 `json:"framesPerSec,omitempty"`
	AllocPerMsg  float64 `json:"allocPerMsg"`
	GC           uint32  `json:"gc"`
	CPUPerMsg    float64 `json:"cpuSecPerMillion"` // server CPU seconds per million messages
	Samples      int     `json:"samples"`
	Impl         string  `json:"impl"`
	Received     uint64  `json:"received"`              // bytes received in all, warm-up included: UDP loss is 1 − received/sent
	WarmupBytes  uint64  `json:"warmupBytes,omitempty"` // of them, the client's priming before its window: left out of the rates
	Interrupted  bool    `json:"interrupted,omitempty"` // stopped (SIGINT, SIGTERM) before the traffic ended
}

// echoServer is a running server of either implementation.
type echoServer struct {
	addr  net.Addr
	bytes func() uint64 // received so far
	open  func() int64  // TCP connections open now; nil for UDP
	close func()
}

// startServer listens on addr (port 0: any) and counts, or echoes, what
// arrives.
func startServer(cfg *Config, addr string) (*echoServer, error) {
	if cfg.Impl == "raw" {
		return startRawServer(cfg, addr) // with --codec: the baseline parses and answers each frame
	}
	if cfg.Codec != "none" {
		return startCodecServer(cfg, addr)
	}
	hooks := transport.Hooks{OnReceive: func(s *transport.Session, p *packet.Packet) {
		if !cfg.OneWay {
			s.Send(p.Share())
		}
	}}
	return serveLifenet(cfg, addr, hooks)
}

// serveLifenet runs a lifenet server with hooks on addr.
func serveLifenet(cfg *Config, addr string, hooks transport.Hooks) (*echoServer, error) {
	srv, err := transport.NewServer(loadServerConfig(cfg), hooks)
	if err != nil {
		return nil, err
	}
	return listenLifenet(cfg, addr, srv)
}

// loadServerConfig is the transport configuration of the lifenet load
// servers. Like NewLife's benchmark servers (UseSession=false) they keep
// no index of sessions by ID.
func loadServerConfig(cfg *Config) transport.Config {
	return transport.Config{SocketReceiveBuffer: cfg.RcvBuf, MaxConnsPerIP: maxClients + 1, MaxConns: maxClients + 1, NoSessionRegistry: true,
		UDPReadBatch: cfg.UDPBatch}
}

// listenLifenet starts srv on addr. What it received is read from the
// transport's counters, which each session keeps on its own (no counter
// shared between connections), summed when sampled.
func listenLifenet(cfg *Config, addr string, srv *transport.Server) (*echoServer, error) {
	a, err := srv.Listen(context.Background(), cfg.protocol(), addr)
	if err != nil {
		srv.Close()
		return nil, err
	}
	es := &echoServer{addr: a, bytes: func() uint64 { return srv.Stats().BytesIn }, close: func() { srv.Close() }}
	if !cfg.UDP {
		es.open = func() int64 { return srv.Stats().Active }
	}
	return es, nil
}

// ErrNoClient is RunServer's error when no client sent anything within
// Config.FirstClient (or before ctx ended).
var ErrNoClient = errors.New("no client sent anything")

// RunServer is `lifenet load --server`: it prints READY, a line per second,
// and once traffic has stopped for IdleExit the STEADY line, then returns.
// If no traffic comes within FirstClient it says so and returns an error
// wrapping ErrNoClient. Stopped while traffic still came (ctx ended), it
// prints STEADY of what it measured and returns ErrInterrupted.
func RunServer(ctx context.Context, cfg Config, out io.Writer) error {
	srv, err := startServer(&cfg, cfg.listenAddr(cfg.Port))
	if err != nil {
		return err
	}
	defer srv.close()
	fmt.Fprintf(out, "READY %s://%s\n", cfg.protocol(), srv.addr)
	st := measureServer(ctx, &cfg, srv, out)
	if st.Samples == 0 {
		if ctx.Err() != nil {
			return fmt.Errorf("%w before the server was stopped", ErrNoClient)
		}
		return fmt.Errorf("%w in %v (--first-client)", ErrNoClient, cfg.FirstClient)
	}
	fmt.Fprintln(out, st.line(&cfg))
	js, _ := json.Marshal(st)
	fmt.Fprintf(out, "STEADY-JSON %s\n", js)
	if st.Interrupted {
		return fmt.Errorf("%w while traffic still came: STEADY is of the %d seconds measured", ErrInterrupted, st.Samples)
	}
	return nil
}

// measureServer reads the byte counter every traceTick until traffic has
// stopped (NetLoadTest: 3 idle seconds after at least one sample; here
// FirstClient if nothing ever came), printing a line for each second that
// saw traffic. STEADY's rate is byteTrace's: the span with traffic, its
// partial ends and the client's priming (a line says how much) left out. Unlike NetLoadTest it does not stop while TCP
// connections are still open, up to stalledExit: a connection that the
// kernel holds back for a few seconds (a retransmission timeout with
// backoff) would otherwise have its echoes cut off and counted as lost.
func measureServer(ctx context.Context, cfg *Config, srv *echoServer, out io.Writer) Steady {
	bytes := srv.bytes
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc0, gc0, cpu0 := ms.TotalAlloc, ms.NumGC, cpustat.Seconds()
	tick := time.NewTicker(traceTick)
	defer tick.Stop()
	begin := time.Now()
	second := bytes() // the counter at the last whole second
	trace := newByteTrace(0, second)
	trace.warmLimit = warmLimit(cfg)
	seconds, idle := 0, time.Duration(0)
	warmShown := false
	interrupted := false
	for n := 1; !interrupted; n++ {
		select {
		case <-ctx.Done():
			interrupted = true
			continue
		case <-tick.C:
		}
		prev := trace.bytes[len(trace.bytes)-1]
		cur := bytes()
		trace.add(time.Since(begin), cur)
		if trace.warm > 0 && !warmShown {
			warmShown = true
			fmt.Fprintf(out, "[server] warm-up: %d bytes of priming before the window, left out of STEADY\n", trace.warm)
		}
		if cur == prev {
			idle += traceTick
			if srv.idleDone(idle, seconds > 0 || trace.first >= 0, cfg) {
				break
			}
		} else {
			idle = 0
		}
		if n%int(time.Second/traceTick) != 0 || cur == second {
			continue
		}
		seconds++
		mib := float64(cur-second) / (1 << 20)
		line := fmt.Sprintf("[server] %.1f MB/s  total %.1f MB", mib, float64(cur)/(1<<20))
		if cfg.Frame > 0 {
			line += fmt.Sprintf("  frames %.2f M/s", float64(cur-second)/float64(cfg.Frame)/1e6)
		}
		fmt.Fprintln(out, line)
		second = cur
	}
	runtime.ReadMemStats(&ms)
	total := bytes()
	st := Steady{Samples: seconds, GC: ms.NumGC - gc0, Impl: cfg.Impl, Received: total, WarmupBytes: trace.warm, Interrupted: interrupted}
	if trace.first < 0 || total == 0 {
		st.Samples = 0
		return st
	}
	st.Samples = max(seconds, 1) // traffic shorter than a second is a sample all the same
	st.MBps = trace.rate() / (1 << 20)
	st.Gbps = st.MBps * 0.008388608
	st.PktPerSec = st.MBps * (1 << 20) / float64(cfg.Size)
	if cfg.Frame > 0 {
		st.FramesPerSec = st.MBps * (1 << 20) / float64(cfg.Frame)
	}
	msgs := float64(total) / float64(cfg.Size)
	st.AllocPerMsg = float64(ms.TotalAlloc-alloc0) / msgs
	st.CPUPerMsg = (cpustat.Seconds() - cpu0) / msgs * 1e6
	return st
}

// warmLimit is the largest first burst the server takes for a client's
// warm-up (byteTrace): the priming of up to 16 client processes (matrix
// --clientprocs), each primeCount messages.
func warmLimit(cfg *Config) uint64 { return 16 * uint64(primeCount(cfg)*cfg.Size) }

// stalledExit bounds how long the server waits without traffic for open
// connections to finish; it exceeds the client's drain patience
// (drainPatience) so that the client gives up first and reports why.
const stalledExit = drainPatience + 5*time.Second

// idleDone reports whether the server has been idle long enough to stop:
// before any traffic, after FirstClient; after it, IdleExit once no
// connection is open, stalledExit while one is.
func (s *echoServer) idleDone(idle time.Duration, sampled bool, cfg *Config) bool {
	switch {
	case !sampled:
		return idle >= cfg.FirstClient
	case s.open != nil && s.open() > 0:
		return idle >= stalledExit
	}
	return idle >= cfg.IdleExit
}

func (st Steady) line(cfg *Config) string {
	s := fmt.Sprintf("[server] STEADY %.1f MB/s  Gbps=%.2f  pkt=%.0f pkt/s", st.MBps, st.Gbps, st.PktPerSec)
	if cfg.Frame > 0 {
		s += fmt.Sprintf("  frame=%.0f frame/s", st.FramesPerSec)
	}
	return s + fmt.Sprintf("  alloc=%.2f B/msg  gc=%d  cpu=%.3f s/Mmsg  samples=%d  impl=%s",
		st.AllocPerMsg, st.GC, st.CPUPerMsg, st.Samples, st.Impl)
}
