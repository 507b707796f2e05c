package rpc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// testCA is a certificate authority made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert, key, pool}
}

// issue makes a certificate for name signed by ca: a server's (for
// 127.0.0.1 and localhost) or a client's.
func (ca *testCA) issue(t *testing.T, name string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	must(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// mtlsServer serves Who/Am (the client certificate's name, as the
// handler's session shows it) over TLS with certificates of ca; an
// interceptor lets in only clients whose certificate chains to ca. auth
// is the server's ClientAuth.
func mtlsServer(t *testing.T, ca *testCA, auth tls.ClientAuthType) string {
	byCert := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		if c.Action() == "Api/Health" {
			return next(ctx, c)
		}
		st := c.Info().Session().TLS()
		if st == nil || len(st.VerifiedChains) == 0 || st.VerifiedChains[0][0].Subject.CommonName != "client-1" {
			return rpc.NewError(rpc.CodeForbidden, "a client certificate of ours, please")
		}
		return next(ctx, c)
	}
	cfg := rpc.Config{
		Transport: transport.Config{TLS: &tls.Config{
			Certificates: []tls.Certificate{ca.issue(t, "server", true)},
			ClientCAs:    ca.pool,
			ClientAuth:   auth,
		}},
		Interceptors: []rpc.Interceptor{byCert},
	}
	_, addr := startServer(t, cfg, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Who/Am", func(ctx context.Context, _ struct{}) (string, error) {
			ss := rpc.SessionFrom(ctx)
			st := ss.TLS()
			return ss.Protocol().String() + " " + st.PeerCertificates[0].Subject.CommonName + " " + tls.VersionName(st.Version), nil
		}))
	})
	return addr
}

func tlsClient(ca *testCA, cert *tls.Certificate) rpc.ClientConfig {
	cfg := &tls.Config{RootCAs: ca.pool}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return rpc.ClientConfig{Transport: transport.ClientConfig{Config: transport.Config{TLS: cfg}}}
}

// Mutual TLS: a client whose certificate chains to the server's CA is let
// in by an interceptor reading Session.TLS, over tls://, wss:// and
// https://; one with a certificate of another CA is refused.
func TestMutualTLS(t *testing.T) {
	ca, rogue := newCA(t, "test CA"), newCA(t, "rogue CA")
	addr := mtlsServer(t, ca, tls.VerifyClientCertIfGiven)
	good, bad := ca.issue(t, "client-1", false), rogue.issue(t, "client-1", false)
	ctx := context.Background()
	for _, c := range []struct{ url, want string }{
		{"tls://" + addr, "SRMP client-1 TLS 1.3"},
		{"wss://" + addr + "/", "WebSocket client-1 TLS 1.3"},
		{"https://" + addr, "HTTP client-1 TLS 1.3"},
		{"tcp://" + addr, "SRMP client-1 TLS 1.3"}, // tcp:// with Transport.TLS set: TLS, as before
	} {
		cl := dialClient(t, c.url, tlsClient(ca, &good))
		if r, err := rpc.Call[string](ctx, cl, "Who/Am", nil); err != nil || r != c.want {
			t.Errorf("%s: %q, %v; want %q", c.url, r, err, c.want)
		}
	}
	// A certificate of another CA: the server, which only verifies a
	// certificate given, refuses it at the handshake.
	for _, url := range []string{"tls://" + addr, "https://" + addr} {
		dctx, cancel := context.WithTimeout(ctx, testTimeout)
		cl, err := rpc.Dial(dctx, url, tlsClient(ca, &bad))
		cancel()
		if err == nil {
			_, err = rpc.Call[string](ctx, cl, "Who/Am", nil)
			cl.Close()
		}
		if err == nil {
			t.Errorf("%s: a rogue certificate was let in", url)
		}
	}
	// No certificate: the handshake passes, the interceptor refuses.
	cl := dialClient(t, "tls://"+addr, tlsClient(ca, nil))
	if _, err := rpc.Call[string](ctx, cl, "Who/Am", nil); !errors.Is(err, rpc.ErrForbidden) {
		t.Errorf("without a certificate: %v, want 403", err)
	}
	if s, err := rpc.Call[string](ctx, cl, "Api/Health", nil); err != nil || s != "Serving" {
		t.Errorf("health without a certificate: %q, %v", s, err)
	}
}

// A server that requires a certificate ends the handshake of a client
// without one of its CA.
func TestTLSRequiredClientCertificate(t *testing.T) {
	ca, rogue := newCA(t, "test CA"), newCA(t, "rogue CA")
	addr := mtlsServer(t, ca, tls.RequireAndVerifyClientCert)
	good, bad := ca.issue(t, "client-1", false), rogue.issue(t, "client-1", false)
	cl := dialClient(t, "tls://"+addr, tlsClient(ca, &good))
	if r, err := rpc.Call[string](context.Background(), cl, "Who/Am", nil); err != nil || r != "SRMP client-1 TLS 1.3" {
		t.Fatalf("good certificate: %q, %v", r, err)
	}
	for _, cert := range []*tls.Certificate{&bad, nil} {
		dctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		cl, err := rpc.Dial(dctx, "tls://"+addr, tlsClient(ca, cert))
		cancel()
		if err == nil { // TLS 1.3: the client's handshake ends before the server checks its certificate
			_, err = rpc.Call[string](context.Background(), cl, "Who/Am", nil)
			cl.Close()
		}
		if err == nil {
			t.Errorf("certificate %v: let in", cert != nil)
		}
	}
}

// tls://, wss:// and https:// check the server's certificate: with the
// system's roots (no Transport.TLS), a test CA's server is refused.
func TestTLSChecksTheServer(t *testing.T) {
	ca := newCA(t, "test CA")
	addr := mtlsServer(t, ca, tls.NoClientCert)
	for _, url := range []string{"tls://" + addr, "wss://" + addr + "/"} {
		dctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		_, err := rpc.Dial(dctx, url, rpc.ClientConfig{})
		cancel()
		var ue x509.UnknownAuthorityError
		if !errors.As(err, &ue) {
			t.Errorf("%s with the system's roots: %v, want an unknown authority", url, err)
		}
	}
	cl := dialClient(t, "https://"+addr, rpc.ClientConfig{})
	if _, err := rpc.Call[string](context.Background(), cl, "Api/Health", nil); err == nil {
		t.Error("https:// with the system's roots reached a test CA's server")
	}
	cl = dialClient(t, "https://"+addr, tlsClient(ca, nil))
	if s, err := rpc.Call[string](context.Background(), cl, "Api/Health", nil); err != nil || s != "Serving" {
		t.Errorf("https:// with the CA: %q, %v", s, err)
	}
}

// A session without TLS has no TLS state.
func TestSessionWithoutTLS(t *testing.T) {
	got := make(chan *tls.ConnectionState, 1)
	_, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Who/Am", func(ctx context.Context, _ struct{}) (string, error) {
			got <- rpc.SessionFrom(ctx).TLS()
			return "", nil
		}))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	must(t, cl.Invoke(context.Background(), "Who/Am", nil, nil))
	if st := recv(t, got, "the handler"); st != nil {
		t.Errorf("TLS state %+v", st)
	}
}
