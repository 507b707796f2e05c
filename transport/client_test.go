package transport_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

func dialClient(t *testing.T, network string, a net.Addr, cfg transport.ClientConfig, hooks transport.Hooks) *transport.Client {
	t.Helper()
	c, err := transport.Dial(context.Background(), network, a.String(), cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// receiveString pulls until n bytes arrived.
func receiveString(t *testing.T, c *transport.Client, n int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []byte
	for len(got) < n {
		p, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("Receive after %q: %v", got, err)
		}
		got = p.AppendTo(got)
		p.Release()
	}
	return string(got)
}

func TestClientEventMode(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	got := make(chan string, 10)
	c := dialClient(t, "tcp", a, transport.ClientConfig{}, transport.Hooks{
		OnReceive: func(_ *transport.Session, p *packet.Packet) { got <- string(p.Bytes()) },
	})
	c.SendBytes([]byte("event"))
	if s := <-got; s != "event" {
		t.Fatalf("got %q", s)
	}
}

func TestClientPullAndChannelModes(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
	c.SendBytes([]byte("pull"))
	if s := receiveString(t, c, 4); s != "pull" {
		t.Fatalf("Receive = %q", s)
	}
	big := make([]byte, 100000) // shared, not copied, past CopyThreshold
	c.SendBytes(big)
	n := 0
	for n < len(big) {
		p := <-c.Packets()
		n += p.Total()
		p.Release()
	}
	ev := dialClient(t, "tcp", a, transport.ClientConfig{}, transport.Hooks{})
	if _, err := ev.Receive(context.Background()); err == nil {
		t.Fatal("Receive in event mode succeeded")
	}
}

func TestClientUnix(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "unix", t.TempDir()+"/c.sock")
	c := dialClient(t, "unix", a, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
	c.SendBytes([]byte("unix"))
	if s := receiveString(t, c, 4); s != "unix" {
		t.Fatalf("got %q", s)
	}
}

func TestUDPEchoAndPeerSessions(t *testing.T) {
	leakcheck.Check(t)
	reasons := make(chan transport.Reason, 2)
	hooks := echoHooks()
	hooks.OnClose = func(_ *transport.Session, e *transport.CloseError) { reasons <- e.Reason }
	srv, a := startServer(t, transport.Config{}, hooks, "udp", "127.0.0.1:0")

	for _, cfg := range []transport.ClientConfig{
		{Mode: transport.ReceivePull},                           // connected socket
		{Mode: transport.ReceivePull, LocalAddr: "127.0.0.1:0"}, // fixed local port: send-to
	} {
		c, err := transport.Dial(context.Background(), "udp", a.String(), cfg, transport.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		c.SendBytes([]byte("ping"))
		if s := receiveString(t, c, 4); s != "ping" {
			t.Fatalf("udp echo %q", s)
		}
		c.Close() // sends the empty datagram that ends the server's session
		if r := <-reasons; r != transport.ReasonPeerClosed {
			t.Fatalf("server session ended with %v", r)
		}
	}
	if st := srv.Stats(); st.Accepted != 2 || st.Active != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// At MaxUDPPeers a new peer pushes out the least recently active one
// (ReasonLimit) instead of being dropped: forged source addresses cannot
// lock the server's peers out.
func TestUDPPeerLimitEvictsTheQuietest(t *testing.T) {
	leakcheck.Check(t)
	srv, a := startServer(t, transport.Config{MaxUDPPeers: 1}, echoHooks(), "udp", "127.0.0.1:0")
	first := dialClient(t, "udp", a, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
	first.SendBytes([]byte("a"))
	receiveString(t, first, 1)
	second := dialClient(t, "udp", a, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
	second.SendBytes([]byte("b"))
	if s := receiveString(t, second, 1); s != "b" {
		t.Fatalf("the new peer got %q", s)
	}
	waitUntil(t, "the quiet peer evicted", func() bool { return srv.Stats().Closed[transport.ReasonLimit] == 1 })
	if srv.SessionCount() != 1 {
		t.Fatalf("%d sessions past the peer limit", srv.SessionCount())
	}
}

// UDP peers have their own budget: however many there are, TCP
// connections up to MaxConns are still accepted (and the other way round).
func TestUDPPeersDoNotTakeTCPSlots(t *testing.T) {
	leakcheck.Check(t)
	srv, err := transport.NewServer(transport.Config{MaxConns: 2, MaxUDPPeers: 8}, echoHooks())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ua, err := srv.Listen(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A listener of its own rather than Listen's shared port: the UDP
	// socket's port may be taken for TCP on a busy machine.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(l); err != nil {
		l.Close()
		t.Fatal(err)
	}
	ta := l.Addr()
	for i := range 5 {
		c := dialClient(t, "udp", ua, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
		c.SendBytes([]byte{byte('0' + i)})
		receiveString(t, c, 1)
	}
	for i := range 2 {
		c := dialClient(t, "tcp", ta, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
		c.SendBytes([]byte("tcp"))
		if s := receiveString(t, c, 3); s != "tcp" {
			t.Fatalf("TCP connection %d with 5 UDP peers live: %q", i, s)
		}
	}
	if n := srv.SessionCount(); n != 7 {
		t.Errorf("%d sessions, want 5 UDP peers + 2 TCP", n)
	}
}

func TestTLSEcho(t *testing.T) {
	leakcheck.Check(t)
	serverTLS, clientTLS := testTLS(t)
	_, a := startServer(t, transport.Config{TLS: serverTLS}, echoHooks(), "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Config: transport.Config{TLS: clientTLS}, Mode: transport.ReceivePull}, transport.Hooks{})
	c.SendBytes([]byte("secret"))
	if s := receiveString(t, c, 6); s != "secret" {
		t.Fatalf("tls echo %q", s)
	}
	// A client that does not trust the certificate is refused.
	if _, err := transport.Dial(context.Background(), "tcp", a.String(),
		transport.ClientConfig{Config: transport.Config{TLS: &tls.Config{ServerName: "localhost"}}}, transport.Hooks{}); err == nil {
		t.Fatal("untrusted certificate accepted")
	}
}

func TestClientReconnects(t *testing.T) {
	leakcheck.Check(t)
	opened := make(chan *transport.Session, 4)
	srv, a := startServer(t, transport.Config{}, transport.Hooks{
		OnOpen:    func(s *transport.Session) { opened <- s },
		OnReceive: func(s *transport.Session, p *packet.Packet) { s.Send(p.Share()) },
	}, "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceivePull, AutoReconnect: true, ReconnectDelay: 10 * time.Millisecond}, transport.Hooks{})
	(<-opened).Close() // the server drops the client
	<-opened           // and the client comes back
	waitUntil(t, "a new client session", func() bool { return c.SendBytes([]byte("again")) == nil })
	if s := receiveString(t, c, 5); s != "again" {
		t.Fatalf("after reconnect: %q", s)
	}
	if srv.Stats().Accepted != 2 {
		t.Fatalf("accepted %d", srv.Stats().Accepted)
	}
}

func TestDialFailsCleanly(t *testing.T) {
	leakcheck.Check(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close() // nothing listens here now
	if _, err := transport.Dial(context.Background(), "tcp", addr, transport.ClientConfig{}, transport.Hooks{}); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	if _, err := transport.Dial(context.Background(), "tcp", addr, transport.ClientConfig{PullQueue: -1}, transport.Hooks{}); err == nil {
		t.Fatal("bad config accepted")
	}
}

// testTLS makes a self-signed certificate for 127.0.0.1 / localhost.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "lifenet test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// A UDP peer that goes quiet expires after UDPPeerIdle.
func TestUDPPeerIdleExpiry(t *testing.T) {
	leakcheck.Check(t)
	reasons := make(chan transport.Reason, 1)
	hooks := echoHooks()
	hooks.OnClose = func(_ *transport.Session, e *transport.CloseError) { reasons <- e.Reason }
	_, a := startServer(t, transport.Config{UDPPeerIdle: 200 * time.Millisecond}, hooks, "udp", "127.0.0.1:0")
	c := dialClient(t, "udp", a, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
	c.SendBytes([]byte("hi"))
	receiveString(t, c, 2)
	select {
	case r := <-reasons:
		if r != transport.ReasonIdle {
			t.Fatalf("UDP peer ended with %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("idle UDP peer never expired")
	}
}

// A client that streams from one goroutine while its receive loop delivers
// echoes must neither stall nor overflow: the receive goroutine never takes
// over the sender's writes (regression: it did while OnReceive was corked).
func TestClientFullDuplexFlood(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	for _, mode := range []transport.ReceiveMode{transport.ReceivePull, transport.ReceiveEvent} {
		const total = 32 << 20
		var got atomic.Int64
		all := make(chan struct{}) // event mode: closed when every echo arrived
		hooks := transport.Hooks{}
		if mode == transport.ReceiveEvent {
			hooks.OnReceive = func(_ *transport.Session, p *packet.Packet) {
				n := int64(p.Len())
				if v := got.Add(n); v >= total && v-n < total { // this receive reached the total
					close(all)
				}
			}
		}
		c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: mode}, hooks)
		go func() {
			b := make([]byte, 1024)
			for sent := 0; sent < total; sent += len(b) {
				if err := c.SendBytes(b); err != nil {
					t.Errorf("send after %d bytes: %v", sent, err)
					return
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for mode == transport.ReceivePull && got.Load() < total {
			p, err := c.Receive(ctx)
			if err != nil {
				t.Fatalf("receive after %d bytes: %v", got.Load(), err)
			}
			got.Add(int64(p.Total()))
			p.Release()
		}
		if mode == transport.ReceiveEvent {
			select { // the same 30 s as pull mode (slow -race lifenet_debug builds)
			case <-all:
			case <-ctx.Done():
				t.Fatalf("event mode: %d of %d bytes echoed in 30 s", got.Load(), total)
			}
		}
		cancel()
		if st := c.Stats(); st.SendQueueOverflows != 0 || st.Active != 1 {
			t.Fatalf("mode %d: stats %+v", mode, st)
		}
		c.Close()
	}
}
