package rpcport_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// A peer that stalls a TLS handshake on the RPC port is closed after
// HandshakeTimeout (10 s by default, 1 s here), not after the first-byte
// timeout (30 s): 20 connections send three bytes of a ClientHello and
// nothing more; a TLS client beside them is served.
func TestStalledTLSHandshakesOnTheRPCPort(t *testing.T) {
	leakcheck.Check(t)
	cert := selfSigned(t)
	srv, err := rpc.NewServer(rpc.Config{Log: quietLog(), Transport: transport.Config{
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, HandshakeTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	handle(t, srv, "Who/Am", func(context.Context, struct{}) (string, error) { return "me", nil })
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var stalled []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", a.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte{0x16, 0x03, 0x01})
		stalled = append(stalled, c)
	}
	pool := x509.NewCertPool()
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	pool.AddCert(leaf)
	cl, err := rpc.Dial(context.Background(), "tls://"+a.String(), rpc.ClientConfig{Log: quietLog(), Transport: transport.ClientConfig{Config: transport.Config{TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if who, err := rpc.Call[string](context.Background(), cl, "Who/Am", nil); err != nil || who != "me" {
		t.Fatalf("a TLS client beside them: %q, %v", who, err)
	}
	for _, c := range stalled {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Read(make([]byte, 64)); err == nil {
			t.Fatal("a stalled handshake answered")
		}
	}
	took := time.Since(start)
	if took > 15*time.Second {
		t.Errorf("the stalled handshakes were closed after %v", took)
	}
	t.Logf("FIGURES stalled TLS handshakes: 20 closed within %v (HandshakeTimeout 1 s; FirstByteTimeout 30 s)", took.Round(time.Millisecond))
}

// selfSigned is a certificate for 127.0.0.1, made in the test.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
