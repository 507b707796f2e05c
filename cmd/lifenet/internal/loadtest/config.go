// Package loadtest implements `lifenet load`: NewLife NetLoadTest's load
// generator and counting/echo server, for lifenet and for a plain std-net
// baseline, with NetLoadTest's flags and output lines (READY, the server's
// per-second lines, STEADY and the client's SUMMARY).
package loadtest

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/transport"
)

// Config is one load run. Flag names and defaults follow NetLoadTest.
type Config struct {
	Mode     string // "pipeline" or "roundtrip"
	OneWay   bool
	Clients  int
	Size     int
	Seconds  float64
	Warmup   float64
	UDP      bool
	Server   bool
	Host     string // the server's listen address (with --server, or in process)
	Port     int
	Remote   string
	Frame    int
	UDPConn  bool
	RecvMode string // "sync", "async" or "event"
	RcvBuf   int
	UDPBatch int    // lifenet UDP server: datagrams per receive system call (0: transport's default)
	Codec    string // "none", "srmp" or "lengthfield"
	Window   int
	// CountReplies makes the raw TCP codec client count reply bytes
	// instead of matching each reply to its request: the floor of any
	// client, not a caller's work (the UDP codec client always counts).
	CountReplies bool
	Impl         string // "lifenet" or "raw"
	JSON         bool
	IdleExit     time.Duration // server: exit after this long without traffic (3 s)
	FirstClient  time.Duration // server: give up (exit 1) if no traffic came in this long (60 s)
	CPUProfile   string        // write a CPU profile of this process here (attribution)
	progressW    io.Writer     // where the progress line goes once a second, or nil
	progressTTY  bool          // progressW is a terminal: redraw one line in place
}

// Limits on the flags, so a typo cannot ask for a runaway test.
const (
	maxClients  = 4096
	maxSize     = 64 << 20
	maxSeconds  = 3600
	maxUDPBatch = 1024 // each datagram of a batch has a 64 KiB buffer
	maxRcvBuf   = 1 << 30
)

// Parse reads NetLoadTest-style flags (`--name value`, `--bool`). For -h
// or --help it returns flag.ErrHelp.
func Parse(args []string) (Config, error) {
	var c Config
	fs, sf := flagSet(&c)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := cliflag.First(cliflag.Between("idle-exit", sf.idle, 0.5, 60), cliflag.Between("first-client", sf.first, 1, maxSeconds)); err != nil {
		return c, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.Remote != "" && set["host"] {
		return c, errors.New("--host is where a server listens; with --remote the server is elsewhere")
	}
	c.IdleExit = time.Duration(sf.idle * float64(time.Second))
	c.FirstClient = time.Duration(sf.first * float64(time.Second))
	return c, c.normalize()
}

// secondFlags are the flags Parse turns into durations.
type secondFlags struct{ idle, first float64 }

// Usage prints the flags and their defaults.
func Usage(w io.Writer) {
	fs, _ := flagSet(&Config{})
	fmt.Fprintln(w, "usage: lifenet load [flags]   (NewLife NetLoadTest flags; without --server/--remote both sides run here)")
	fmt.Fprintln(w, "  two machines: lifenet load --server --host 0.0.0.0 on one, lifenet load --remote HOST:7800 on the other")
	fmt.Fprintf(w, "  UDP echo runs that lose more than %g %% of their datagrams say so on stderr and in the result (the rate is then\n", LossWarnPct)
	fmt.Fprintln(w, "  a measure of loss). Interrupted (SIGINT or SIGTERM), a run reports the time that ran and exits 1.")
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func flagSet(c *Config) (*flag.FlagSet, *secondFlags) {
	var sf secondFlags
	fs := flag.NewFlagSet("lifenet load", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.Mode, "mode", "pipeline", "pipeline or roundtrip (with --oneway: ignored)")
	fs.BoolVar(&c.OneWay, "oneway", false, "client only sends; server only counts")
	fs.IntVar(&c.Clients, "clients", 4, "connections")
	fs.IntVar(&c.Size, "size", 1024, "payload bytes per send")
	fs.Float64Var(&c.Seconds, "seconds", 10, "measurement window (s)")
	fs.Float64Var(&c.Warmup, "warmup", 2, "pause before priming (s)")
	fs.BoolVar(&c.UDP, "udp", false, "UDP instead of TCP (echo runs warn when more than 5 % of the datagrams are lost)")
	fs.BoolVar(&c.Server, "server", false, "run only the server")
	fs.StringVar(&c.Host, "host", "127.0.0.1", "address the server listens on (0.0.0.0 or :: for all)")
	fs.IntVar(&c.Port, "port", 7800, "server port (with --server; 0 picks a free one)")
	fs.StringVar(&c.Remote, "remote", "", "host:port of an external server")
	fs.IntVar(&c.Frame, "frame", 0, "logical frame size for frames/s")
	fs.BoolVar(&c.UDPConn, "udpconnect", false, "connect the UDP client socket")
	fs.StringVar(&c.RecvMode, "recvmode", "sync", "sync, async or event (codec round trips: sync = the waiting request reads, otherwise a receive goroutine)")
	fs.IntVar(&c.RcvBuf, "rcvbuf", 0, "SO_RCVBUF on both ends (0: OS default)")
	fs.IntVar(&c.UDPBatch, "udpbatch", 0, "lifenet UDP server: datagrams per receive system call on Linux (0: the transport default, 1: one read per datagram, the portable loop)")
	fs.StringVar(&c.Codec, "codec", "none", "none, srmp or lengthfield (frames of --size bytes, header included; with --udp one frame per datagram, sent by the raw client whatever --impl)")
	fs.IntVar(&c.Window, "window", 0, "frames in flight per connection in codec pipeline mode (default: the codec's limit, srmp 255, lengthfield 256 for the raw client)")
	fs.BoolVar(&c.CountReplies, "count-replies", false, "raw TCP codec client: count reply bytes instead of matching each reply to its request (the floor of any client; lifenet's client always matches)")
	fs.StringVar(&c.Impl, "impl", "lifenet", "lifenet or raw (std net baseline)")
	fs.BoolVar(&c.JSON, "json", false, "machine output only")
	fs.Float64Var(&sf.idle, "idle-exit", 3, "server: idle seconds before STEADY and exit")
	fs.Float64Var(&sf.first, "first-client", 60, "server: seconds to wait for the first client's traffic; without any it says so and exits 1")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write this process's CPU profile to the file")
	return fs, &sf
}

func (c *Config) normalize() error {
	c.Mode = strings.ToLower(c.Mode)
	if c.RecvMode == "asyncpull" {
		c.RecvMode = "async"
	}
	switch {
	case c.Mode != "pipeline" && c.Mode != "roundtrip":
		return fmt.Errorf("--mode %q: want pipeline or roundtrip", c.Mode)
	case !validHost(c.Host):
		return fmt.Errorf("--host %q: want an IP address", c.Host)
	case c.Remote != "" && !validRemote(c.Remote):
		return fmt.Errorf("--remote %q: want host:port", c.Remote)
	}
	if err := cliflag.First(
		cliflag.Between("clients", c.Clients, 1, maxClients),
		cliflag.Between("size", c.Size, 1, maxSize),
		cliflag.Between("seconds", c.Seconds, 0.1, maxSeconds),
		cliflag.Between("warmup", c.Warmup, 0, maxSeconds),
		cliflag.Between("port", c.Port, 0, 65535),
		cliflag.Between("frame", c.Frame, 0, maxSize),
		cliflag.Between("rcvbuf", c.RcvBuf, 0, maxRcvBuf),
		cliflag.Between("udpbatch", c.UDPBatch, 0, maxUDPBatch),
	); err != nil {
		return err
	}
	switch {
	case c.RecvMode != "sync" && c.RecvMode != "async" && c.RecvMode != "event":
		return fmt.Errorf("--recvmode %q: want sync, async or event", c.RecvMode)
	case c.Impl != "lifenet" && c.Impl != "raw":
		return fmt.Errorf("--impl %q: want lifenet or raw", c.Impl)
	case c.Codec != "none" && c.Codec != "srmp" && c.Codec != "lengthfield":
		return fmt.Errorf("--codec %q: want none, srmp or lengthfield", c.Codec)
	case c.Codec != "none" && (c.Size <= codecHeader(c.Codec) || c.Codec == "lengthfield" && c.Size > 65535+2):
		return fmt.Errorf("--size %d does not fit a %s frame", c.Size, c.Codec)
	case c.Codec != "none" && c.Impl == "raw" && !c.UDP && c.Size > baseline.BufferSize: // UDP: clamped to a datagram below
		return fmt.Errorf("--size %d: raw %s frames must fit the baseline's %d-byte buffer", c.Size, c.Codec, baseline.BufferSize)
	case c.CountReplies && c.Codec == "none":
		return errors.New("--count-replies needs --codec srmp or lengthfield")
	case c.CountReplies && c.Impl != "raw" && !c.UDP:
		return errors.New("--count-replies is for --impl raw: lifenet's codec client always matches each reply to its request")
	case c.Window != 0 && c.Codec == "none":
		return errors.New("--window needs --codec srmp or lengthfield")
	case c.Window != 0 && c.Codec == "srmp" && (c.Window < 1 || c.Window > 255):
		return cliflag.Between("window", c.Window, 1, 255)
	case c.Window != 0 && (c.Window < 1 || c.Window > 256):
		return cliflag.Between("window", c.Window, 1, 256)
	case c.Server && c.Remote != "":
		return errors.New("--server and --remote exclude each other")
	}
	if c.UDP && c.Size > transport.MaxDatagram {
		c.Size = transport.MaxDatagram
	}
	if c.Frame > 0 {
		c.Size = max(c.Frame, c.Size/c.Frame*c.Frame)
	}
	return nil
}

// validHost reports whether h can be a listen address: an IP (0.0.0.0 and
// :: listen on all interfaces) or localhost, as `lifenet serve --host`.
func validHost(h string) bool { return net.ParseIP(h) != nil || h == "localhost" }

// validRemote reports whether a is host:port with a port number.
func validRemote(a string) bool {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n <= 65535
}

// listenAddr is where the server listens: --host and port.
func (c *Config) listenAddr(port int) string {
	return net.JoinHostPort(c.Host, strconv.Itoa(port))
}

// dialAddr is the address a client in this process dials to reach a
// server listening on a: a wildcard address becomes its loopback.
func dialAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}

// rawClient reports whether the client is the std-net one: with --impl
// raw, and for UDP codec runs with either --impl, so that lifenet's codec
// server and the baseline's datagram loop are driven alike (one frame per
// datagram, the same timing of requests) and compared server to server.
func (c *Config) rawClient() bool { return c.Impl == "raw" || c.UDP && c.Codec != "none" }

// baselineCodec reports whether the client is the baseline's codec caller
// (baseline.Client): --impl raw with a TCP codec, requests answered (not
// --oneway) and matched (not --count-replies). Like lifenet's codec
// client it matches every reply to its request and hands it to a
// callback (windowed) or returns it (serial).
func (c *Config) baselineCodec() bool {
	return c.Impl == "raw" && c.Codec != "none" && !c.UDP && !c.OneWay && !c.CountReplies
}

// replies says what the client does with the replies of a codec run:
// "matched" to their requests, "counted" as bytes, or "" (no codec, or
// one-way).
func (c *Config) replies() string {
	switch {
	case c.Codec == "none" || c.OneWay:
		return ""
	case c.rawClient() && !c.baselineCodec():
		return "counted"
	}
	return "matched"
}

func (c *Config) protocol() string {
	if c.UDP {
		return "udp"
	}
	return "tcp"
}

func (c *Config) modeName() string {
	if c.OneWay {
		return "oneway"
	}
	return c.Mode
}

// echoTimeout bounds each wait for an echo in UDP round trips: a lost
// datagram costs a second (NetLoadTest's watchdog). Elsewhere it is 0: a
// TCP echo is bounded by the window, and UDP pipelines count what arrives.
func (c *Config) echoTimeout() time.Duration {
	if c.UDP && c.Mode == "roundtrip" {
		return time.Second
	}
	return 0
}
