package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startSide serves handler on a side port holding at most maxConns
// connections, shut down when the test ends.
func startSide(t *testing.T, maxConns int, handler http.Handler) (*capListener, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, cl := newSideServer(l, maxConns, handler)
	served := make(chan struct{})
	go func() { hs.Serve(cl); close(served) }()
	t.Cleanup(func() {
		hs.Close()
		<-served
	})
	return cl, l.Addr().String()
}

func dialSide(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readAll reads c to its end, failing t if it has not ended within 10 s.
func readAll(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("still open after 10 s, read %q", b)
	}
	return string(b)
}

// waitSide polls cond every millisecond for up to 10 s.
func waitSide(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 10 s", what)
		}
	}
}

func (l *capListener) idle() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.open {
		if !c.idleSince.IsZero() {
			n++
		}
	}
	return n
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })

// TestCapListenerRefusesPastTheCapAtOnce: with its two places held by
// connections that sent nothing, a third connection gets the 503 and is
// closed at once (not left in the kernel's backlog); a place given back
// takes the next.
func TestCapListenerRefusesPastTheCapAtOnce(t *testing.T) {
	t.Parallel()
	cl, addr := startSide(t, 2, okHandler)
	a, _ := dialSide(t, addr), dialSide(t, addr)
	waitSide(t, "two connections held", func() bool { return cl.conns() == 2 })
	if got := readAll(t, dialSide(t, addr)); !strings.HasPrefix(got, "HTTP/1.1 503 Service Unavailable\r\n") || !strings.Contains(got, "at most 2 connections") {
		t.Errorf("third connection: %q, want the 503", got)
	}
	if cl.refused.Load() != 1 || cl.conns() != 2 {
		t.Errorf("refused %d, held %d: want 1 and 2", cl.refused.Load(), cl.conns())
	}
	a.Close()
	waitSide(t, "the place given back", func() bool { return cl.conns() == 1 })
	c := dialSide(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if got := readAll(t, c); !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") {
		t.Errorf("after a place was given back: %q", got)
	}
}

// TestCapListenerEvictsTheIdleLongest: held keep-alive connections idle
// between requests do not lock a new one out: the one idle longest is
// closed for it.
func TestCapListenerEvictsTheIdleLongest(t *testing.T) {
	t.Parallel()
	cl, addr := startSide(t, 2, okHandler)
	var idle []net.Conn
	for range 2 {
		c := dialSide(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("keep-alive GET: %v %v", res, err)
		}
		idle = append(idle, c)
		waitSide(t, "the connection idle", func() bool { return cl.idle() == len(idle) })
	}
	c := dialSide(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if got := readAll(t, c); !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") {
		t.Errorf("with two idle connections held: %q, want a 200", got)
	}
	if got := readAll(t, idle[0]); got != "" {
		t.Errorf("the evicted connection read %q", got)
	}
	if cl.evicted.Load() != 1 || cl.refused.Load() != 0 {
		t.Errorf("evicted %d refused %d: want 1 and 0", cl.evicted.Load(), cl.refused.Load())
	}
	// The other one is still held: a request on it is answered.
	io.WriteString(idle[1], "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if got := readAll(t, idle[1]); !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") {
		t.Errorf("the connection idle since later: %q", got)
	}
}

// TestSideServerTimesOutASilentConnection: a connection that never sends
// its request header gives its place back (ReadHeaderTimeout, 5 s).
func TestSideServerTimesOutASilentConnection(t *testing.T) {
	t.Parallel()
	cl, addr := startSide(t, 1, okHandler)
	c := dialSide(t, addr)
	start := time.Now()
	if got := readAll(t, c); got != "" {
		t.Errorf("a silent connection read %q", got)
	}
	if d := time.Since(start); d < sideReadHeaderTimeout-time.Second {
		t.Errorf("closed after %v, before the header timeout %v", d, sideReadHeaderTimeout)
	}
	waitSide(t, "the place given back", func() bool { return cl.conns() == 0 })
}

func TestSideConnsLimit(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{{0, maxSideConns}, {1 << 20, maxSideConns}, {256, 64}, {1024, 256}, {3, 1}, {^uint64(0), maxSideConns}} {
		if got := sideConnsLimit(c.limit); got != c.want {
			t.Errorf("file limit %d: %d, want %d", c.limit, got, c.want)
		}
	}
}

// TestMetricsPortMethods: the metrics port answers GET and HEAD; any other
// method is a 405 whose Allow names them (issue 45).
func TestMetricsPortMethods(t *testing.T) {
	_, metrics := startServe(t, "--port", "0", "--udp=false", "--metrics", "127.0.0.1:0", "--metrics-conns", "8")
	for _, url := range metrics {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "PROPFIND"} {
			req, _ := http.NewRequestWithContext(context.Background(), m, url, strings.NewReader("x"))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", m, url, err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q: want 405 and GET, HEAD", m, url, res.StatusCode, res.Header.Get("Allow"))
			}
		}
		res, err := http.Head(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || len(b) != 0 {
			t.Errorf("HEAD %s: %d with %d bytes", url, res.StatusCode, len(b))
		}
	}
	var st Status
	if err := json.Unmarshal([]byte(get(t, metrics[1])), &st); err != nil {
		t.Fatal(err)
	}
	if st.MetricsPort == nil || st.MetricsPort.MaxConns != 8 || st.MetricsPort.Conns < 1 {
		t.Errorf("/status metrics_port %+v: want conns_max 8 and this connection", st.MetricsPort)
	}
}
