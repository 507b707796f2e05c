package loadtest

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// tcpSocket is one row of Linux's /proc/net/tcp{,6}: where a connection's
// bytes sit in the kernel and what its retransmission timer is doing. A
// stalled drain prints these for both ends of every unfinished
// connection, so a kernel-side stall (a retransmission timeout backing
// off) can be told apart from a user-space one.
type tcpSocket struct {
	local, remote netip.AddrPort
	unacked       int // sent, not yet acknowledged by the peer (tx_queue)
	unread        int // received, not yet read by the application (rx_queue)
	timer         int // 0 none, 1 retransmit, 2 keepalive, 4 zero-window probe
	timerMillis   int // until the timer fires
	retransmits   int // unrecovered retransmission timeouts in a row
	probes        int // zero-window probes sent without answer
	rtoMillis     int
	cwnd          int
}

func (t tcpSocket) String() string {
	s := fmt.Sprintf("%v→%v unacked %d B, unread %d B, rto %d ms, cwnd %d", t.local, t.remote, t.unacked, t.unread, t.rtoMillis, t.cwnd)
	switch t.timer {
	case 1:
		s += fmt.Sprintf(", retransmit timer in %d ms after %d timeouts", t.timerMillis, t.retransmits)
	case 4:
		s += fmt.Sprintf(", zero-window probe in %d ms after %d probes", t.timerMillis, t.probes)
	}
	return s
}

// describeStalled returns the kernel's view of the connections whose local
// ends are given and that still hold bytes, both ends of each, one per
// line, at most maxStalledLines; "" where /proc/net/tcp is not available
// (not Linux).
func describeStalled(locals []netip.AddrPort) string {
	want := make(map[netip.AddrPort]bool, 2*len(locals))
	for _, a := range locals {
		want[a] = true
	}
	var lines []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		rows, err := readTCPTable(f)
		if err != nil {
			continue
		}
		var mine []tcpSocket
		for _, r := range rows {
			if want[r.local] {
				mine = append(mine, r)
			}
		}
		for _, c := range mine { // the client end, then the server end
			for _, r := range rows {
				if r.local == c.remote && r.remote == c.local && (c.holds() || r.holds()) {
					lines = append(lines, "client "+c.String(), "server "+r.String())
				}
			}
		}
	}
	if len(lines) > maxStalledLines {
		lines = append(lines[:maxStalledLines], fmt.Sprintf("(%d more)", len(lines)-maxStalledLines))
	}
	return strings.Join(lines, "\n")
}

const maxStalledLines = 16

// holds reports whether bytes are still queued in this socket.
func (t tcpSocket) holds() bool { return t.unacked > 0 || t.unread > 0 }

func readTCPTable(path string) ([]tcpSocket, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseTCPTable(f)
}

// parseTCPTable reads the rows of a /proc/net/tcp{,6} table, skipping
// rows it cannot read (the format has grown fields over kernel versions;
// only the first 16 are used).
func parseTCPTable(r io.Reader) ([]tcpSocket, error) {
	sc := bufio.NewScanner(r)
	var out []tcpSocket
	for first := true; sc.Scan(); first = false {
		if first {
			continue // header
		}
		if t, ok := parseTCPRow(strings.Fields(sc.Text())); ok {
			out = append(out, t)
		}
	}
	return out, sc.Err()
}

// clockTicksMillis converts the table's clock_t values (USER_HZ, 100 on
// Linux) to milliseconds.
const clockTicksMillis = 10

func parseTCPRow(f []string) (tcpSocket, bool) {
	if len(f) < 16 {
		return tcpSocket{}, false
	}
	local, ok1 := parseProcAddr(f[1])
	remote, ok2 := parseProcAddr(f[2])
	tx, rx, ok3 := strings.Cut(f[4], ":")
	tr, when, ok4 := strings.Cut(f[5], ":")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return tcpSocket{}, false
	}
	hexInt := func(s string) int { v, _ := strconv.ParseInt(s, 16, 64); return int(v) }
	decInt := func(s string) int { v, _ := strconv.Atoi(s); return v }
	return tcpSocket{
		local: local, remote: remote,
		unacked: hexInt(tx), unread: hexInt(rx),
		timer: hexInt(tr), timerMillis: hexInt(when) * clockTicksMillis,
		retransmits: hexInt(f[6]), probes: decInt(f[8]),
		rtoMillis: decInt(f[12]) * clockTicksMillis, cwnd: decInt(f[15]),
	}, true
}

// parseProcAddr reads "0100007F:5DE7": the address as the kernel's
// in-memory 32-bit words printed in hex (IPv4 one word, IPv6 four), the
// port in plain hex. The words are in host order, taken here as
// little-endian (amd64, arm64).
func parseProcAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(h)
	port, perr := strconv.ParseUint(p, 16, 16)
	if err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 { // each 32-bit word is in host (little-endian) order
		binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), true
}

// addrPortOf converts a connection's net.Addr for describeStalled.
func addrPortOf(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}
