package rpctool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/internal/testutil/tcpserver"
	"github.com/lifenet/lifenet/rpc"
)

// silentPeer listens on a free port, accepts connections and reads them,
// never writing a byte (a program that is not a server of ours, an HTTP
// server waiting for a line's end), until the test ends.
func silentPeer(t *testing.T) string {
	t.Helper()
	return tcpserver.Start(t, func(c net.Conn) { io.Copy(io.Discard, c) })
}

// The bound for an answer that must come at the first contact, not
// after a call's timeout (15 s): generous, so a loaded machine does not
// fail it, and well below the timeout, so the code before the fix does.
const soonEnough = 10 * time.Second

// maxOverrun is the most rpcload may run past its window (warm-up and
// measured seconds); slack is what a test allows a loaded machine on top
// (a call's timeout, 15 s, is far above both).
const (
	maxOverrun = 2 * time.Second
	slack      = 3 * time.Second
)

// A peer that accepts and sends nothing fails the probe with
// ErrSilentPeer, well before the call's timeout.
func TestProbeOfASilentPeer(t *testing.T) {
	t.Parallel()
	addr := silentPeer(t)
	cl, err := rpc.Dial(context.Background(), addr, rpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	err = probe(context.Background(), cl, silenceLimit, start)
	if took := time.Since(start); !errors.Is(err, ErrSilentPeer) || !strings.Contains(err.Error(), "SRMP") || took > soonEnough {
		t.Fatalf("probe: %v after %v; want ErrSilentPeer naming SRMP within %v", err, took, soonEnough)
	}
}

// lifenet call to a silent peer says so within seconds; to a real server,
// an action slower than the probe's limit still answers.
func TestCallNamesASilentPeerAndWaitsForASlowAction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var out, errOut bytes.Buffer
	start := time.Now()
	code := Call(ctx, []string{silentPeer(t), "Bench/NoArg"}, &out, &errOut)
	if took := time.Since(start); code != 1 || !strings.Contains(errOut.String(), "sent nothing") || !strings.Contains(errOut.String(), "SRMP") || took > soonEnough {
		t.Errorf("call of a silent peer: exit %d after %v, stderr %q; want 1 within %v, naming the silence", code, took, errOut.String(), soonEnough)
	}

	addr := serveForTest(t)
	out.Reset()
	errOut.Reset()
	ms := (silenceWait + silenceProbe).Milliseconds() + 1000 // longer than the watch
	if code := Call(ctx, []string{addr, "Bench/Sleep", "ms=" + itoa(ms)}, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != itoa(ms) {
		t.Errorf("call of Bench/Sleep ms=%d: exit %d, out %q, stderr %q; want its answer", ms, code, out.String(), errOut.String())
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// loadRun runs rpcload with args and returns its exit code, stdout,
// stderr and how long it ran.
func loadRun(t *testing.T, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	var out, errOut bytes.Buffer
	start := time.Now()
	code := Load(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String(), time.Since(start)
}

// rpcload against a silent peer and an HTTP server (net/http answers
// SRMP's bytes with nothing, waiting for a line's end) stops at its first
// contact, naming what it saw, not after its window and a call's timeout.
func TestRPCLoadStopsAtAPeerThatIsNotSRMP(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	for name, addr := range map[string]string{"silent": silentPeer(t), "HTTP": web.Listener.Addr().String()} {
		code, _, errOut, took := loadRun(t, "--remote", addr, "--seconds", "1", "--warmup", "0")
		if code != 1 || !strings.Contains(errOut, "SRMP") || took > soonEnough {
			t.Errorf("%s: exit %d after %v, stderr %q; want 1 within %v, naming SRMP", name, code, took, errOut, soonEnough)
		}
	}
}

// benchServer runs a server of Bench/NoArg whose calls go through gate
// (nil: none), and Api/Info, in this process.
func benchServer(t *testing.T, cfg rpc.Config, noArg func(context.Context) (int32, error)) (*rpc.Server, string) {
	t.Helper()
	srv, err := rpc.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rpc.Handle(srv, "Bench/NoArg", func(ctx context.Context, _ struct{}) (int32, error) { return noArg(ctx) }); err != nil {
		t.Fatal(err)
	}
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, a.String()
}

// summaryOf parses rpcload's SUMMARY line.
func summaryOf(t *testing.T, out string) rpcbench.Summary {
	t.Helper()
	var s rpcbench.Summary
	i := strings.LastIndex(out, "SUMMARY: ")
	if i < 0 || json.Unmarshal([]byte(strings.TrimSpace(out[i+len("SUMMARY: "):])), &s) != nil {
		t.Fatalf("rpcload printed %q, no SUMMARY", out)
	}
	return s
}

// A server that stops answering (its calls hang) holds rpcload at most
// loadGrace past its window, and the run's error says why no call
// completed (it was empty).
func TestRPCLoadEndsSoonAfterItsWindowWhenTheServerHangs(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	_, addr := benchServer(t, rpc.Config{}, func(ctx context.Context) (int32, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return 0, ctx.Err()
	})
	const window = 1.0
	code, out, errOut, took := loadRun(t, "--remote", addr, "--seconds", "1", "--warmup", "0", "--inflight", "2")
	if max := time.Duration(window*float64(time.Second)) + maxOverrun + slack; took > max {
		t.Errorf("rpcload ran %v for a %g s window, want at most %v", took, window, max)
	}
	s := summaryOf(t, out)
	first := ""
	if _, after, ok := strings.Cut(errOut, "first error: "); ok {
		first = strings.TrimSuffix(strings.TrimSpace(after), ")")
	}
	if code != 1 || s.Calls != 0 || first == "" {
		t.Errorf("exit %d, %+v, first error %q; want 1, no calls and a reason; stderr:\n%s", code, s, first, errOut)
	}
}

// A server that goes away mid-run: the calls before count, those after
// fail (counted, the first named), and the run ends with its window.
func TestRPCLoadWhenTheServerIsKilledMidRun(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	enough := make(chan struct{})
	srv, addr := benchServer(t, rpc.Config{}, func(context.Context) (int32, error) {
		if served.Add(1) == 200 {
			close(enough)
		}
		return 42, nil
	})
	go func() {
		select {
		case <-enough:
		case <-time.After(soonEnough):
		}
		srv.Close()
	}()
	const window = 2.0
	code, out, errOut, took := loadRun(t, "--remote", addr, "--seconds", "2", "--warmup", "0")
	if max := time.Duration(window*float64(time.Second)) + maxOverrun + slack; took > max {
		t.Errorf("rpcload ran %v for a %g s window, want at most %v", took, window, max)
	}
	s := summaryOf(t, out)
	if code != 0 || s.Calls < 150 || s.Errors == 0 || s.FirstError == "" {
		t.Errorf("exit %d, %+v; want 0, the calls before the kill, errors after it and the first named; stderr:\n%s", code, s, errOut)
	}
}
