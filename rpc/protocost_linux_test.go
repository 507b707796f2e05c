package rpc_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// protoCostEnv turns TestIdleConnectionCostByProtocol on: the number of
// connections to hold per protocol (it takes ~10 s a protocol).
const protoCostEnv = "LIFENET_PROTOCOST"

// What an idle connection costs a server, by protocol: server RSS growth
// over N connections that each made one call, 5 s after the last (a
// server of its own in a child process, one protocol at a time):
//
//	LIFENET_PROTOCOST=2000 go test -run TestIdleConnectionCostByProtocol -v ./rpc/
//
// Raw SRMP connections park (no goroutine, no read buffer); TLS and
// WebSocket ones keep their goroutine and buffers (docs/design/parking.md).
// The bounds are loose, against a regression that keeps a 64 KiB read
// buffer per connection.
func TestIdleConnectionCostByProtocol(t *testing.T) {
	if os.Getenv(protoCostChildEnv) != "" {
		serveProtoCostChild(t)
		return
	}
	n, _ := strconv.Atoi(os.Getenv(protoCostEnv))
	if n <= 0 {
		t.Skip("set " + protoCostEnv + "=N to measure (N connections a protocol)")
	}
	for _, c := range []struct {
		proto string
		limit int
	}{{"srmp", 8 << 10}, {"tls", 64 << 10}, {"ws", 64 << 10}} {
		got := idleCost(t, c.proto, n)
		t.Logf("%s: %d bytes of server RSS per idle connection (%d connections)", c.proto, got, n)
		if got > c.limit {
			t.Errorf("%s: %d bytes per idle connection, want at most %d", c.proto, got, c.limit)
		}
	}
}

const protoCostChildEnv = "LIFENET_PROTOCOST_CHILD"

// serveProtoCostChild is the child's server: an inline T/Nop over the
// protocol the environment names, its address and CA on stdout, until
// stdin closes.
func serveProtoCostChild(t *testing.T) {
	proto := os.Getenv(protoCostChildEnv)
	ca := newCA(t, "ca")
	cfg := rpc.DefaultConfig()
	cfg.Transport.MaxConnsPerIP = transport.NoLimit
	if proto == "tls" {
		cfg.Transport.TLS = &tls.Config{Certificates: []tls.Certificate{ca.issue(t, "server", true)}}
	}
	srv, err := rpc.NewServer(cfg)
	must(t, err)
	defer srv.Close()
	must(t, rpc.Handle(srv, "T/Nop", func(context.Context, struct{}) (int, error) { return 1, nil }, rpc.WithInline()))
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	must(t, err)
	fmt.Printf("ADDR %s\n%s", a, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}))
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// idleCost measures one protocol in a child server: bytes of its RSS per
// connection held.
func idleCost(t *testing.T, proto string, n int) int {
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleConnectionCostByProtocol$")
	cmd.Env = append(os.Environ(), protoCostChildEnv+"="+proto)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer cmd.Wait()
	defer stdin.Close()
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	must(t, err)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))
	var pemText []byte
	for !strings.Contains(string(pemText), "END CERTIFICATE") {
		l, err := r.ReadString('\n')
		must(t, err)
		pemText = append(pemText, l...)
	}
	blk, _ := pem.Decode(pemText)
	cert, err := x509.ParseCertificate(blk.Bytes)
	must(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)

	ccfg := rpc.ClientConfig{Timeout: 10 * time.Second}
	if proto == "tls" {
		ccfg.Transport.TLS = &tls.Config{RootCAs: pool}
	}
	url := map[string]string{"srmp": "tcp://", "tls": "tls://", "ws": "ws://"}[proto] + addr
	time.Sleep(time.Second) // the child's start settles
	before := vmRSS(t, cmd.Process.Pid)
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cl, err := rpc.Dial(ctx, url, ccfg)
		cancel()
		must(t, err)
		defer cl.Close()
		var one int
		must(t, cl.Invoke(context.Background(), "T/Nop", nil, &one))
	}
	time.Sleep(5 * time.Second) // idle: sessions that can park have
	return (vmRSS(t, cmd.Process.Pid) - before) * 1024 / n
}

// vmRSS is a process's resident set, in KiB.
func vmRSS(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "VmRSS:" {
			n, err := strconv.Atoi(f[1])
			must(t, err)
			return n
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}
