package cluster_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// DNS record types the test server answers.
const (
	typeA    = 1
	typeAAAA = 28
	typeSRV  = 33
)

type srvRecord struct {
	priority, weight, port uint16
	target                 string
}

// dnsServer is a tiny authoritative DNS server on loopback UDP: it
// answers A and SRV questions from its maps (AAAA with no answer),
// NXDOMAIN for names it does not know, and SERVFAIL for every question
// while failing is set.
type dnsServer struct {
	pc      net.PacketConn
	mu      sync.Mutex
	a       map[string][]net.IP // by lower-case absolute name
	srv     map[string][]srvRecord
	failing atomic.Bool
	queries atomic.Int64
	done    chan struct{}
}

func startDNS(t *testing.T) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	d := &dnsServer{pc: pc, a: map[string][]net.IP{}, srv: map[string][]srvRecord{}, done: make(chan struct{})}
	go d.serve()
	t.Cleanup(func() { pc.Close(); <-d.done })
	return d
}

func (d *dnsServer) setA(name string, ips ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []net.IP
	for _, s := range ips {
		out = append(out, net.ParseIP(s).To4())
	}
	d.a[name] = out
}

func (d *dnsServer) setSRV(name string, recs ...srvRecord) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.srv[name] = recs
}

// resolver is a pure-Go net.Resolver that asks d alone.
func (d *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "udp", d.pc.LocalAddr().String())
	}}
}

func (d *dnsServer) serve() {
	defer close(d.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := d.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply := d.answer(buf[:n]); reply != nil {
			d.pc.WriteTo(reply, from)
		}
	}
}

// answer builds the reply to one query: the header, the question copied,
// then the answers, each naming the question by a pointer to offset 12.
func (d *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	d.queries.Add(1)
	name, end, ok := readName(q, 12)
	if !ok || end+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end:])
	question := q[12 : end+4]

	d.mu.Lock()
	ips, knownA := d.a[name]
	srvs, knownSRV := d.srv[name]
	d.mu.Unlock()
	rcode := 0
	var answers [][]byte
	switch {
	case d.failing.Load():
		rcode = 2 // SERVFAIL
	case !knownA && !knownSRV:
		rcode = 3 // NXDOMAIN
	case qtype == typeA:
		for _, ip := range ips {
			answers = append(answers, rr(typeA, ip))
		}
	case qtype == typeSRV:
		for _, s := range srvs {
			data := binary.BigEndian.AppendUint16(nil, s.priority)
			data = binary.BigEndian.AppendUint16(data, s.weight)
			data = binary.BigEndian.AppendUint16(data, s.port)
			answers = append(answers, rr(typeSRV, appendName(data, s.target)))
		}
	}
	out := make([]byte, 12, 512)
	copy(out, q[:2])                                          // ID
	binary.BigEndian.PutUint16(out[2:], 0x8580|uint16(rcode)) // QR, AA, RD, RA
	binary.BigEndian.PutUint16(out[4:], 1)
	binary.BigEndian.PutUint16(out[6:], uint16(len(answers)))
	out = append(out, question...)
	for _, a := range answers {
		out = append(out, a...)
	}
	return out
}

// rr is a resource record of the question's name (a pointer to it),
// class IN, a TTL of 1 s.
func rr(typ uint16, data []byte) []byte {
	b := []byte{0xC0, 12}
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint16(b, 1)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	return append(b, data...)
}

// readName reads an uncompressed name at off: lower-case, absolute.
func readName(b []byte, off int) (string, int, bool) {
	var labels []string
	for off < len(b) {
		n := int(b[off])
		off++
		if n == 0 {
			return strings.ToLower(strings.Join(labels, ".")) + ".", off, true
		}
		if n > 63 || off+n > len(b) {
			return "", 0, false
		}
		labels = append(labels, string(b[off:off+n]))
		off += n
	}
	return "", 0, false
}

func appendName(b []byte, name string) []byte {
	for l := range strings.SplitSeq(strings.TrimSuffix(name, "."), ".") {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0)
}

// watchSets runs r's Watch until the test ends and passes on each set.
func watchSets(t *testing.T, r rpc.Resolver) <-chan []rpc.Endpoint {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sets := make(chan []rpc.Endpoint, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Watch(ctx, func(eps []rpc.Endpoint) { sets <- eps })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return sets
}

func addrs(eps []rpc.Endpoint) []string {
	var out []string
	for _, e := range eps {
		out = append(out, e.Addr)
	}
	return out
}

func nextSet(t *testing.T, sets <-chan []rpc.Endpoint) []rpc.Endpoint {
	t.Helper()
	select {
	case eps := <-sets:
		return eps
	case <-time.After(testTimeout):
		t.Fatal("no endpoint set in time")
		return nil
	}
}

// The A form: the set, a change, a DNS outage that keeps the set, and a
// lookup that finds the same set again reports nothing.
func TestDNSResolverA(t *testing.T) {
	leakcheck.Check(t)
	d := startDNS(t)
	d.setA("svc.test.", "127.0.0.2", "127.0.0.1")
	sets := watchSets(t, cluster.DNSResolver{Host: "svc.test.", Port: 4000, Interval: 20 * time.Millisecond, Resolver: d.resolver()})

	if got, want := addrs(nextSet(t, sets)), []string{"127.0.0.1:4000", "127.0.0.2:4000"}; !slices.Equal(got, want) {
		t.Errorf("first set %v, want %v", got, want)
	}
	d.setA("svc.test.", "127.0.0.3")
	if got, want := addrs(nextSet(t, sets)), []string{"127.0.0.3:4000"}; !slices.Equal(got, want) {
		t.Errorf("changed set %v, want %v", got, want)
	}

	// Outage (SERVFAIL, then NXDOMAIN): lookups go on, no set comes.
	d.failing.Store(true)
	q := d.queries.Load()
	time.Sleep(150 * time.Millisecond)
	d.failing.Store(false)
	d.mu.Lock()
	delete(d.a, "svc.test.")
	d.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	if d.queries.Load() < q+4 {
		t.Errorf("%d queries in 250 ms at a 20 ms interval: not re-resolving", d.queries.Load()-q)
	}
	select {
	case eps := <-sets:
		t.Errorf("a set %v during the outage (the last must stay)", addrs(eps))
	default:
	}
	d.setA("svc.test.", "127.0.0.3", "127.0.0.4")
	if got, want := addrs(nextSet(t, sets)), []string{"127.0.0.3:4000", "127.0.0.4:4000"}; !slices.Equal(got, want) {
		t.Errorf("set after the outage %v, want %v", got, want)
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case eps := <-sets:
		t.Errorf("a set %v though nothing changed", addrs(eps))
	default:
	}
}

// The SRV form end to end: a cluster client of three real servers found
// through SRV records (targets resolved by the same resolver), round-robin
// reaching each, then one record removed and no call reaching it.
func TestDNSResolverSRV(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	d := startDNS(t)
	var recs []srvRecord
	for i, s := range ss {
		_, port, _ := net.SplitHostPort(s.addr)
		p, err := strconv.Atoi(port)
		must(t, err)
		target := string(rune('a'+i)) + ".hosts.test."
		d.setA(target, "127.0.0.1")
		recs = append(recs, srvRecord{priority: 10, weight: uint16(i + 1), port: uint16(p), target: target})
	}
	d.setSRV("_rpc._tcp.svc.test.", recs...)
	r := cluster.DNSResolver{Host: "svc.test.", Service: "rpc", Interval: 20 * time.Millisecond, Resolver: d.resolver()}

	eps := nextSet(t, watchSets(t, r))
	if len(eps) != 3 {
		t.Fatalf("SRV set %v, want 3 endpoints", eps)
	}
	for _, e := range eps {
		for i, s := range ss {
			if e.Addr == s.addr && (e.Weight != i+1 || e.Meta["target"] != string(rune('a'+i))+".hosts.test" || e.Meta["priority"] != "10") {
				t.Errorf("endpoint %+v: want weight %d, its target and priority", e, i+1)
			}
		}
	}

	c := dial(t, r, roundRobin(t), cluster.Config{})
	must(t, load(c, 30, 1))
	for _, s := range ss {
		if s.who.Load() != 10 {
			t.Errorf("server %s took %d of 30 calls, want 10", s.name, s.who.Load())
		}
	}
	d.setSRV("_rpc._tcp.svc.test.", recs[1:]...)
	until(t, "the record's removal", func() bool { return len(c.Endpoints()) == 2 })
	before := ss[0].who.Load()
	must(t, load(c, 30, 1))
	if n := ss[0].who.Load() - before; n != 0 {
		t.Errorf("the server whose record went took %d calls", n)
	}
}

func TestDNSResolverConfig(t *testing.T) {
	leakcheck.Check(t)
	for _, r := range []cluster.DNSResolver{{}, {Host: "x"}, {Host: "x", Port: 70000}, {Host: "x", Port: 1, Interval: -1}} {
		if err := r.Watch(context.Background(), func([]rpc.Endpoint) {}); !errors.Is(err, cluster.ErrConfig) {
			t.Errorf("%+v: Watch = %v, want ErrConfig", r, err)
		}
	}
}
