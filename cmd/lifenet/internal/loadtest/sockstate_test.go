package loadtest

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseTCPTable(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:5DE7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2306431 2 00000000eefb9df8 100 0 0 10 0
   1: 0100007F:9C40 0100007F:5DE7 01 00010000:00000200 01:0000012C 00000003  1000        0 2306500 2 0000000011111111 320 4 0 26 -1
   2: short row
`
	rows, err := parseTCPTable(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2 (header and short row skipped)", len(rows))
	}
	got := rows[1]
	want := tcpSocket{
		local: netip.MustParseAddrPort("127.0.0.1:40000"), remote: netip.MustParseAddrPort("127.0.0.1:24039"),
		unacked: 0x10000, unread: 0x200, timer: 1, timerMillis: 3000, retransmits: 3, rtoMillis: 3200, cwnd: 26,
	}
	if got != want {
		t.Fatalf("row = %+v\nwant  %+v", got, want)
	}
	if s := got.String(); !strings.Contains(s, "retransmit timer in 3000 ms after 3 timeouts") {
		t.Errorf("String() = %q", s)
	}
}

func TestParseProcAddrIPv6(t *testing.T) {
	for in, want := range map[string]string{
		"00000000000000000000000001000000:1F90": "[::1]:8080",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80", // v4-mapped reads as plain IPv4
	} {
		got, ok := parseProcAddr(in)
		if !ok || got != netip.MustParseAddrPort(want) {
			t.Errorf("parseProcAddr(%s) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "7F", "0100007F", "0100007F:XYZ", "01007F:0050"} {
		if _, ok := parseProcAddr(bad); ok {
			t.Errorf("parseProcAddr(%q) accepted", bad)
		}
	}
}

// A connection whose reader has stopped shows up with the bytes it holds
// on both ends.
func TestDescribeStalledFindsHeldBytes(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp here")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept() // never read: the bytes stay queued
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := c.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	idle := netip.MustParseAddrPort("127.0.0.1:1") // not a socket: ignored
	// Write returns once the bytes are in the kernel; the table shows them
	// in the server's receive queue a moment later, with no way to wait
	// for that but to look again.
	var out string
	if !eventually(func() bool {
		out = describeStalled([]netip.AddrPort{addrPortOf(c.LocalAddr()), idle})
		return strings.Contains(out, "server ") && strings.Contains(out, "unread 1000 B")
	}) {
		t.Fatalf("the server end's 1000 unread bytes never showed:\n%s", out)
	}
	if !strings.Contains(out, "client "+c.LocalAddr().String()) {
		t.Fatalf("client end missing:\n%s", out)
	}
}

// The server does not stop while TCP connections are open, unless they
// stay silent for stalledExit; with none open it stops after IdleExit.
func TestServerWaitsForOpenConnections(t *testing.T) {
	var open int64
	s := &echoServer{open: func() int64 { return open }}
	exit := 2 * time.Second
	cfg := &Config{IdleExit: exit, FirstClient: 10 * time.Second}
	cases := []struct {
		idle    time.Duration
		sampled bool
		open    int64
		done    bool
	}{
		{exit, true, 0, true},
		{exit - time.Second, true, 0, false},
		{exit, true, 3, false},
		{stalledExit - time.Second, true, 1, false},
		{stalledExit, true, 1, true},
		{9 * time.Second, false, 0, false}, // nothing came yet: FirstClient
		{9 * time.Second, false, 2, false},
		{10 * time.Second, false, 0, true},
	}
	for _, c := range cases {
		open = c.open
		if got := s.idleDone(c.idle, c.sampled, cfg); got != c.done {
			t.Errorf("idle %v sampled %v open %d: done = %v, want %v", c.idle, c.sampled, c.open, got, c.done)
		}
	}
	udp := &echoServer{} // no connections to wait for
	if !udp.idleDone(exit, true, cfg) {
		t.Error("UDP server did not stop after IdleExit")
	}
}

func FuzzParseTCPTable(f *testing.F) {
	f.Add("hdr\n   1: 0100007F:9C40 0100007F:5DE7 01 00010000:00000200 01:0000012C 00000003  1000        0 2306500 2 0000000011111111 320 4 0 26 -1\n")
	f.Add("hdr\n 0: 00000000000000000000000001000000:1F90 0000000000000000FFFF00000100007F:0050 01 0:0 0:0 0 0 0 0 0 0 0 0 0 0\n")
	f.Fuzz(func(t *testing.T, table string) {
		rows, _ := parseTCPTable(strings.NewReader(table))
		for _, r := range rows {
			_ = r.String()
			if !r.local.IsValid() || !r.remote.IsValid() {
				t.Fatalf("row with an invalid address: %+v", r)
			}
		}
	})
}
