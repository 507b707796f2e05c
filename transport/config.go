package transport

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"time"
)

// Defaults. Every limit is finite unless a caller disables it explicitly.
const (
	DefaultServerReadBuffer = 64 << 10         // per-connection receive buffer of servers
	DefaultClientReadBuffer = 64 << 10         // per-connection receive buffer of clients
	DefaultMaxConns         = 10000            // live stream sessions per server (UDP peers: DefaultMaxUDPPeers)
	DefaultMaxConnsPerIP    = 1000             // live sessions per remote IP
	DefaultIdleTimeout      = 20 * time.Minute // NewLife SessionTimeout (1200 s)
	DefaultFirstByteTimeout = 30 * time.Second // first bytes after accept
	DefaultHandshakeTimeout = 10 * time.Second // an accepted connection's TLS handshake
	DefaultParkAfter        = time.Second      // a server connection's quiet time before it parks (Linux)
	DefaultSendQueueBytes   = 4 << 20          // room of a session's send queue: a send past it waits (or, for Enqueue, counts as full)
	DefaultSendStallTimeout = 10 * time.Second // a full send queue with no byte written for this long: a slow consumer
	DefaultWriteTimeout     = 30 * time.Second // one vectored write
	DefaultKeepAlive        = 15 * time.Second // TCP keep-alive period
	DefaultDialTimeout      = 3 * time.Second  // NewLife ISocketClient.Timeout
	DefaultUDPPeerIdle      = 5 * time.Minute  // idle expiry of a UDP virtual session
	DefaultMaxUDPPeers      = 65536            // live UDP virtual sessions per UDP listener
	DefaultMaxSocketSend    = 4 << 20          // SO_SNDBUF growth limit for large messages
	DefaultUDPReadBatch     = 32               // datagrams per receive system call of a UDP server (Linux)
)

// NoLimit, as MaxConns or MaxConnsPerIP, lifts that limit: a caller's
// explicit choice (zero takes the default, and negative counts are
// invalid).
const NoLimit = math.MaxInt

// NoDelay selects TCP_NODELAY. The default differs by side: accepted
// server connections disable Nagle's algorithm, as in NewLife; clients use
// [NoDelayAuto], which keeps Nagle's batching for streams of small writes
// (one-way streams of small messages are faster with it) but not for large
// messages.
type NoDelay uint8

// NoDelay modes.
const (
	NoDelayDefault NoDelay = iota // servers: NoDelayOn; clients: NoDelayAuto
	NoDelayOn
	NoDelayOff
	// NoDelayAuto keeps Nagle's algorithm until the first message of at
	// least [AutoNoDelaySize] bytes is written, then turns it off for good:
	// Nagle holds back the short last segment of every large message
	// (docs/perf/socket.md: +25 % client CPU, −8 % throughput at 64 KiB).
	NoDelayAuto
)

// AutoNoDelaySize is the message size at which [NoDelayAuto] turns Nagle's
// algorithm off.
const AutoNoDelaySize = 16 << 10

// Config holds the settings of a server or client. The zero value means
// "all defaults"; a zero field takes the default named on it, and the
// timeouts accept a negative value to disable them. A [Config] is read when
// the server or client is created and not after.
type Config struct {
	// ReadBufferSize is the size of each connection's pooled receive
	// buffer (default 64 KiB).
	ReadBufferSize int
	// SocketReceiveBuffer and SocketSendBuffer set SO_RCVBUF and SO_SNDBUF
	// of TCP connections and UDP sockets (0: OS default).
	SocketReceiveBuffer, SocketSendBuffer int
	// MaxSocketSendBuffer bounds how far a TCP connection's SO_SNDBUF grows
	// to fit a message larger than it, as NewLife grows it to the message
	// size (default 4 MiB). Growth applies only when SocketSendBuffer is
	// set: at 0 the OS autotunes the buffer (Linux stops autotuning once
	// SO_SNDBUF is set, so lifenet leaves it alone).
	MaxSocketSendBuffer int
	// NoDelay selects TCP_NODELAY (default: on for servers, [NoDelayAuto]
	// for clients).
	NoDelay NoDelay
	// KeepAlive is the TCP keep-alive period (default 15 s; negative: off).
	KeepAlive time.Duration

	// MaxConns caps a server's live stream sessions: TCP, Unix and TLS
	// connections (default 10000; [NoLimit]: none). UDP peers do not
	// count: they have MaxUDPPeers. A connection past it is closed at
	// once ([ReasonLimit]).
	//
	// Its last tenth is shared fairly among remote IPs. Once live streams
	// reach MaxConns − MaxConns/10, a connection from an IP that already
	// holds n of them is refused (limit "MaxConnsFairShare", [ReasonLimit])
	// unless n is below the mean the other IPs hold, times the fraction
	// of that last tenth still free: at the tenth's start an IP may grow
	// to the others' mean, halfway through to half of it, and the last
	// slots go only to IPs that hold none or few. So a dozen IPs that hold
	// most of the server cannot lock out an IP that holds few. An IP that
	// holds none, and the only IP holding any, are admitted while there is
	// room; connections without an IP (Unix) are not rationed. With
	// MaxConns below 10 the last tenth is empty and the rule is off. The
	// default is sized to stay below a process's file limit (each
	// connection is a descriptor; past the limit accept fails instead of
	// refusing cleanly): a gateway holding more raises it along with the
	// limit, or runs several processes on one port ([Config.ReusePort]).
	MaxConns int
	// MaxConnsPerIP caps live sessions from one remote IP (default 1000;
	// [NoLimit]: none).
	MaxConnsPerIP int
	// NoSessionRegistry turns off a server's lookup of sessions by ID, as
	// NewLife's UseSession=false does: [Server.Session] then finds
	// nothing. Counting (SessionCount, [Stats]), Range, Broadcast and
	// shutdown keep working: they walk the list of open sessions every
	// server keeps, in the order of their IDs, which is also what the
	// lookup searches (16 bytes a session either way).
	NoSessionRegistry bool
	// IdleTimeout closes a session that receives nothing for this long
	// (default 20 min; negative: never).
	IdleTimeout time.Duration
	// FirstByteTimeout closes an accepted connection that sends nothing
	// (and completes no TLS handshake) for this long (default 30 s;
	// negative: never).
	FirstByteTimeout time.Duration
	// HandshakeTimeout bounds an accepted connection's TLS handshake
	// (default 10 s; negative: only FirstByteTimeout): a peer that stalls
	// it is closed (ReasonFirstByte) before it holds its connection for
	// FirstByteTimeout.
	HandshakeTimeout time.Duration
	// ParkAfter is how long a server's TCP or Unix connection has nothing
	// to read before it parks (default 1 s; negative: never): its receive
	// goroutine ends and its read buffer goes back to the pool, and the
	// kernel's readiness (epoll) starts a goroutine again for its next
	// bytes. An idle connection then holds no goroutine stack and no
	// buffer. A new connection, and one woken after ParkAfter or more
	// without bytes, does not wait: it reads what has come and parks again
	// at once; one that sends again within ParkAfter keeps its goroutine. Linux only; TLS connections, adopted ones ([Server.Adopt])
	// and clients' never park. Handlers see no difference: a session's
	// receives still come one at a time, in order. A parked session's
	// IdleTimeout and FirstByteTimeout are kept by a sweep each second, so
	// they may end it up to a second late.
	ParkAfter time.Duration
	// KeepFreedMemory leaves the memory that a burst freed to Go's
	// runtime, which hands it back to the OS over minutes. By default a
	// server with parked sessions looks at the heap up to twice a second,
	// and when much was allocated since its last trim (16 MiB and half the
	// heap) and allocation has since all but stopped — the end of a burst
	// of large messages, or of a ramp of new connections — it has the
	// runtime collect and return the free memory at once (runtime.GC and
	// debug.FreeOSMemory, at most once per 5 s in a process; once more 1 s
	// after the wave of sessions parking that follows), so that a
	// gateway's memory is back at its idle size within seconds of a
	// burst. Set it where a process runs collections of its own.
	KeepFreedMemory bool

	// SendQueueBytes is the room of each session's send queue: the bytes
	// that may wait to be written (default 4 MiB). It is not a burst
	// limit, and a peer that reads is never closed for it. A message that
	// does not fit waits for room (Send and SendBytes until the session
	// closes, SendContext and SendBytesContext until their context ends
	// too) instead of failing: the queue drains as fast as the peer reads,
	// and senders that wait are admitted in the order they came. A single
	// message larger than SendQueueBytes is taken on an empty queue.
	// Enqueue and EnqueueBytes (pushes, Broadcast), which never wait, queue
	// past it; a session they would make hold more than twice
	// SendQueueBytes, queued and being written, is closed as a slow
	// consumer at once. So a session holds at most SendQueueBytes behind
	// the write in progress, twice that with Enqueue.
	SendQueueBytes int
	// SendStallTimeout judges slow consumers by progress: a session whose
	// send queue is full — its unwritten bytes (queued, and left of the
	// write in progress) past SendQueueBytes, or a sender waiting for room
	// — while not a byte is written for this long is closed with
	// [ReasonSlowConsumer], and its waiting senders fail with [ErrSlowConsumer]
	// (default 10 s; negative: never, leaving a peer that does not read to
	// WriteTimeout). Progress is seen per write call, and large batches are
	// written in calls of at most 256 KiB, so a peer that takes 256 KiB per
	// SendStallTimeout (26 KiB/s at the default) is never one. A stall is
	// caught within a quarter of SendStallTimeout past it.
	SendStallTimeout time.Duration
	// WriteTimeout bounds each write call to the socket (default 30 s;
	// negative: none); a large batch goes out in calls of at most 256 KiB,
	// so a peer that keeps reading is never cut by it.
	WriteTimeout time.Duration

	// TLS, if set, makes TCP servers serve TLS with it and clients
	// connect with it.
	TLS *tls.Config

	// ReusePort sets SO_REUSEPORT on the TCP and UDP sockets that
	// [Server.Listen] opens, so that several servers, in one process or
	// several, listen on one port: Linux spreads new connections and
	// datagrams over them by a hash of the peer's address and port
	// (darwin and the BSDs let them bind, but do not promise to spread
	// the load). Every socket on the port must set it, all of one user.
	// It is supported where [ReusePortSupported]; elsewhere NewServer
	// fails with [ErrConfig]. Listeners passed to Serve and ServePacket
	// are the caller's to set up.
	ReusePort bool

	// UDPPeerIdle expires a UDP virtual session that receives nothing for
	// this long (default 5 min; negative: never).
	UDPPeerIdle time.Duration
	// MaxUDPPeers caps live UDP virtual sessions per UDP listener (default
	// 65536); a new peer past it ends the least recently active of a
	// sample of peers ([ReasonLimit]). It is the UDP budget: MaxConns counts
	// stream sessions only.
	MaxUDPPeers int
	// UDPReadBatch is how many datagrams a UDP server socket takes per
	// receive system call where the OS can batch them (Linux recvmmsg;
	// default 32): one call, and one wake-up of the receive goroutine, for
	// up to that many datagrams instead of one each. 1 reads one datagram
	// per call, the portable loop of other systems and of packet
	// connections other than *net.UDPConn. Each datagram of a batch has a
	// pooled 64 KiB buffer, which fits the largest datagram of either IP
	// version (none is cut short), so a batch of 32 holds 2 MiB per socket.
	UDPReadBatch int

	// Log gets the server's or client's log lines (nil: slog.Default() as
	// it is when the server or client is created; slog.New(slog.DiscardHandler)
	// silences them): Debug when a session opens and closes, Warn when a
	// limit closes a session or refuses a connection, Error for a hook's
	// panic and an accept that failed for want of a resource. Warn and
	// Error lines are rate-limited (at most 10 of a kind per 10 s, then one
	// line counting the rest). docs/observability.md lists the lines and
	// their attributes. Nothing is formatted for a level the logger does
	// not enable.
	Log *slog.Logger
}

// DefaultConfig returns a [Config] with every field at its default ([NoDelay]
// stays [NoDelayDefault], which each side resolves). A zero Config means the
// same; [DefaultConfig] is the place to start when changing a few fields.
func DefaultConfig() Config {
	c, _ := Config{}.withDefaults(true)
	c.NoDelay = NoDelayDefault
	return c
}

// Validate reports a field out of range: a negative size or count, an
// unknown [NoDelay] mode, or ReusePort where it is not supported. Zero fields are valid (they take defaults).
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"ReadBufferSize", c.ReadBufferSize}, {"SocketReceiveBuffer", c.SocketReceiveBuffer},
		{"SocketSendBuffer", c.SocketSendBuffer}, {"MaxSocketSendBuffer", c.MaxSocketSendBuffer},
		{"MaxConns", c.MaxConns}, {"MaxConnsPerIP", c.MaxConnsPerIP},
		{"SendQueueBytes", c.SendQueueBytes}, {"MaxUDPPeers", c.MaxUDPPeers},
		{"UDPReadBatch", c.UDPReadBatch},
	} {
		if f.v < 0 {
			return fmt.Errorf("%w: %s is %d", ErrConfig, f.name, f.v)
		}
	}
	if c.NoDelay > NoDelayAuto {
		return fmt.Errorf("%w: unknown NoDelay mode %d", ErrConfig, c.NoDelay)
	}
	if c.ReusePort && !ReusePortSupported {
		return fmt.Errorf("%w: ReusePort is not supported on %s", ErrConfig, runtime.GOOS)
	}
	return nil
}

// withDefaults returns c with every zero field set to its default for a
// server (server true) or a client, or an error naming a bad field.
func (c Config) withDefaults(server bool) (Config, error) {
	if err := c.Validate(); err != nil {
		return c, err
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if server {
		def(&c.ReadBufferSize, DefaultServerReadBuffer)
	} else {
		def(&c.ReadBufferSize, DefaultClientReadBuffer)
	}
	def(&c.MaxConns, DefaultMaxConns)
	def(&c.MaxConnsPerIP, DefaultMaxConnsPerIP)
	def(&c.SendQueueBytes, DefaultSendQueueBytes)
	def(&c.MaxUDPPeers, DefaultMaxUDPPeers)
	def(&c.UDPReadBatch, DefaultUDPReadBatch)
	def(&c.MaxSocketSendBuffer, DefaultMaxSocketSend)
	defDur(&c.KeepAlive, DefaultKeepAlive)
	defDur(&c.IdleTimeout, DefaultIdleTimeout)
	defDur(&c.FirstByteTimeout, DefaultFirstByteTimeout)
	defDur(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	defDur(&c.ParkAfter, DefaultParkAfter)
	defDur(&c.WriteTimeout, DefaultWriteTimeout)
	defDur(&c.SendStallTimeout, DefaultSendStallTimeout)
	defDur(&c.UDPPeerIdle, DefaultUDPPeerIdle)
	if c.NoDelay == NoDelayDefault {
		c.NoDelay = NoDelayAuto
		if server {
			c.NoDelay = NoDelayOn
		}
	}
	return c, nil
}
