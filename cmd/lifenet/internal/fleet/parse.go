package fleet

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// MaxSources bounds --sources: a range of more addresses is a typo.
const MaxSources = 4096

// ParseSources parses --sources: a comma list of local IP addresses, each
// item an address or an IPv4 range FIRST-LAST (127.0.0.1-127.0.0.20).
// An empty s is no source (the kernel picks one).
func ParseSources(s string) ([]netip.Addr, error) {
	if s == "" {
		return nil, nil
	}
	var out []netip.Addr
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		first, last, isRange := strings.Cut(item, "-")
		a, err := netip.ParseAddr(first)
		if err != nil {
			return nil, fmt.Errorf("--sources: %q is not an IP address", first)
		}
		a = a.Unmap()
		if !isRange {
			out = append(out, a)
		} else {
			b, err := netip.ParseAddr(last)
			if err != nil {
				return nil, fmt.Errorf("--sources: %q is not an IP address", last)
			}
			b = b.Unmap()
			if !a.Is4() || !b.Is4() || b.Less(a) {
				return nil, fmt.Errorf("--sources: range %q: want FIRST-LAST, two IPv4 addresses, FIRST not after LAST", item)
			}
			for x := a; ; x = x.Next() {
				out = append(out, x)
				if x == b || len(out) > MaxSources {
					break
				}
			}
		}
		if len(out) > MaxSources {
			return nil, fmt.Errorf("--sources: more than %d addresses", MaxSources)
		}
	}
	for _, a := range out[1:] {
		if a.Is4() != out[0].Is4() {
			return nil, fmt.Errorf("--sources: IPv4 and IPv6 addresses mixed")
		}
	}
	return out, nil
}

// ParseSize parses a byte size: a number with an optional unit B, KB,
// KiB, MB, MiB (KB = 1000, KiB = 1024; case-insensitive).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"k", 1 << 10}, {"m", 1 << 20}, {"b", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a size (want e.g. 512, 60KiB, 1MiB)", s)
	}
	return n * mult, nil
}

// ParseRate parses --ramp: connections per second, "500" or "500/s".
func ParseRate(s string) (int, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--ramp %q: want connections per second, e.g. 1000/s (0: as fast as the server accepts)", s)
	}
	return n, nil
}

// ParsePIDs parses --server-pid: a comma list of process ids.
func ParsePIDs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for item := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(item))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--server-pid %q: want process ids, e.g. 1234 or 1234,1240", s)
		}
		out = append(out, n)
	}
	if len(out) > 64 {
		return nil, fmt.Errorf("--server-pid: more than 64 processes")
	}
	return out, nil
}
