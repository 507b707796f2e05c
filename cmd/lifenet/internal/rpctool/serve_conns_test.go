package rpctool

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/transport"
)

// --max-conns and --max-conns-per-ip take 0 for "no limit", which the
// transport spells NoLimit (its 0 takes the default).
func TestConnLimitMapsZeroToNoLimit(t *testing.T) {
	for in, want := range map[int]int{0: transport.NoLimit, 1: 1, 20000: 20000} {
		if got := connLimit(in); got != want {
			t.Errorf("connLimit(%d) = %d, want %d", in, got, want)
		}
	}
}

// --keepalive takes 0 for "off", which the transport spells with a
// negative period (its 0 takes the default).
func TestKeepAliveMapsZeroToOff(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: -1, time.Minute: time.Minute} {
		if got := keepAliveOf(in); got != want {
			t.Errorf("keepAliveOf(%v) = %v, want %v", in, got, want)
		}
	}
}

func TestServeConnFlagErrorsExit2(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-conns", "-1"}, "--max-conns"},
		{[]string{"--max-conns-per-ip", "-5"}, "--max-conns-per-ip"},
		{[]string{"--max-conns", "100000001"}, "--max-conns"},
		{[]string{"--max-conns", "5", "--impl", "netrpc"}, "lifenet servers only"},
		{[]string{"--reuseport", "--impl", "netrpc"}, "lifenet servers only"},
		{[]string{"--keepalive", "-1s"}, "--keepalive"},
		{[]string{"--keepalive", "25h"}, "--keepalive"},
		{[]string{"--keepalive", "1m", "--impl", "netrpc"}, "lifenet servers only"},
	} {
		var out, errOut bytes.Buffer
		code := Serve(context.Background(), c.args, &out, &errOut)
		if msg := errOut.String(); code != 2 || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line naming %s", c.args, code, msg, c.want)
		}
	}
}

// held reports whether the server keeps c open: a read that times out
// (the server waits for a request) rather than one that ends (refused:
// closed at once).
func held(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return false
}

// serve --max-conns 2 serves two connections and refuses the third.
func TestServeMaxConnsRefusesPastIt(t *testing.T) {
	addr := serveForTest(t, "--udp=false", "--max-conns", "2", "--max-conns-per-ip", "0")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if i < 2 && !held(t, c) {
			t.Fatalf("connection %d of --max-conns 2 was refused", i+1)
		}
	}
	c := conns[2]
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); err == nil || ok && ne.Timeout() {
		t.Fatalf("the third connection past --max-conns 2: %v, want it closed at once", err)
	}
}

// Two serve runs with --reuseport share one port, TCP and UDP; a third
// without it cannot bind the port (exit 1).
func TestServeReusePortSharesAPort(t *testing.T) {
	if !transport.ReusePortSupported {
		var errOut bytes.Buffer
		if code := Serve(context.Background(), []string{"--reuseport"}, io.Discard, &errOut); code != 2 || !strings.Contains(errOut.String(), "not supported") {
			t.Fatalf("--reuseport where unsupported: exit %d, %q; want 2, not supported", code, errOut.String())
		}
		return
	}
	first := serveForTest(t, "--reuseport")
	_, port, err := net.SplitHostPort(first)
	if err != nil {
		t.Fatal(err)
	}
	second := serveForTest(t, "--reuseport", "--port", port)
	if second != first {
		t.Fatalf("the second serve listens on %s, want %s", second, first)
	}
	var errOut bytes.Buffer
	code := Serve(context.Background(), []string{"--port", port}, io.Discard, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "address already in use") {
		t.Fatalf("serve without --reuseport on port %s: exit %d, %q; want 1, address already in use", port, code, errOut.String())
	}
}
