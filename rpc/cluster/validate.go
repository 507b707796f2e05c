package cluster

import (
	"context"
	"hash/fnv"
	"log/slog"
	"strconv"

	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/rpc"
)

// Rate-limited kinds of log lines: a registry's entries cause them, as
// many as it has.
const (
	kindBadEndpoint = iota // an entry skipped (Warn)
	kindDialFailed         // a dial that failed (Warn)
	numKinds
)

var kindMsgs = [numKinds]string{"cluster: endpoint skipped", "cluster: dial failed"}

// logLimited writes a Warn line of kind, at most logattr.Burst of a kind
// per logattr.Interval; the lines held back are counted in one line at the
// interval's end.
func (c *Client) logLimited(kind int, msg string, args ...any) {
	if c.log.Enabled(context.Background(), slog.LevelWarn) && c.limits.Allow(kind) {
		c.log.Warn(msg, args...)
	}
}

func (c *Client) logSuppressed(kind int, n uint64) {
	c.log.Warn("cluster: log lines suppressed", logattr.Line, kindMsgs[kind], logattr.Suppressed, n)
}

// maxLoggedAddr bounds the bytes of an address a log line quotes.
const maxLoggedAddr = 128

// clip returns a, cut to maxLoggedAddr bytes with its length noted.
func clip(a string) string {
	if len(a) <= maxLoggedAddr {
		return a
	}
	return a[:maxLoggedAddr] + "…(" + strconv.Itoa(len(a)) + " bytes)"
}

// maxLoggedAddrs bounds the addresses the "endpoint set" line lists.
const maxLoggedAddrs = 16

// firstAddrs returns the first maxLoggedAddrs of addrs.
func firstAddrs(addrs []string) []string {
	if len(addrs) > maxLoggedAddrs {
		return addrs[:maxLoggedAddrs]
	}
	return addrs
}

// valid returns the entries of set the client can use, in order, and how
// many it skipped: those [rpc.Endpoint.Validate] refuses (an empty
// address, one past [rpc.MaxEndpointAddr], a list, a scheme the client
// cannot dial, no host or port), repeats of an address, and those past
// Config.MaxEndpoints. An entry refused is logged once, when it appears
// (rate-limited); one update never fails for its bad entries. Called
// under c.mu.
func (c *Client) valid(set []rpc.Endpoint) ([]rpc.Endpoint, int) {
	out := set[:0:0]
	seen := make(map[string]struct{}, len(set))
	var bad map[uint64]struct{}
	skipped, over := 0, 0
	for _, ep := range set {
		if err := ep.Validate(); err != nil {
			skipped++
			h := fnv.New64a()
			h.Write([]byte(ep.Addr))
			k := h.Sum64()
			if bad == nil {
				bad = map[uint64]struct{}{}
			}
			bad[k] = struct{}{}
			if _, logged := c.badSeen[k]; !logged {
				c.logLimited(kindBadEndpoint, "cluster: endpoint skipped", "addr", clip(ep.Addr), "err", errText(err, ep.Addr))
			}
			continue
		}
		if _, dup := seen[ep.Addr]; dup {
			skipped++
			continue
		}
		if len(out) >= c.cfg.MaxEndpoints {
			over++
			continue
		}
		seen[ep.Addr] = struct{}{}
		out = append(out, ep)
	}
	c.badSeen = bad
	if over > 0 && !c.overCap {
		c.log.Warn("cluster: endpoint set over MaxEndpoints; the rest skipped", "max", c.cfg.MaxEndpoints, "skipped", over)
	}
	c.overCap = over > 0
	return out, skipped + over
}

// errText is err's text, the address in it clipped (Validate quotes an
// address of up to rpc.MaxEndpointAddr bytes).
func errText(err error, addr string) string {
	s := err.Error()
	if len(addr) <= maxLoggedAddr {
		return s
	}
	if len(s) > 2*maxLoggedAddr {
		return s[:2*maxLoggedAddr] + "…"
	}
	return s
}
