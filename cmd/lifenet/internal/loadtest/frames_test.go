package loadtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

func TestParseRawCodecFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--impl", "raw", "--codec", "srmp", "--size", "70000"},        // beyond the baseline's buffer
		{"--impl", "raw", "--codec", "lengthfield", "--size", "65537"}, // the largest length-field frame, one byte too many
		{"--impl", "raw", "--codec", "lengthfield", "--window", "257"},
		{"--impl", "raw", "--codec", "srmp", "--window", "256"},
		{"--impl", "raw", "--window", "8"},                          // a window needs a codec
		{"--impl", "raw", "--count-replies"},                        // counting replies needs a codec
		{"--impl", "lifenet", "--codec", "srmp", "--count-replies"}, // lifenet's codec client always matches
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("Parse(%q) accepted", args)
		}
	}
	for _, args := range [][]string{
		{"--impl", "raw", "--codec", "lengthfield", "--size", "65536", "--window", "256"},
		{"--impl", "lifenet", "--codec", "lengthfield", "--size", "65537"},
		{"--impl", "raw", "--codec", "srmp", "--size", "5", "--window", "1"},
		{"--impl", "raw", "--codec", "lengthfield", "--count-replies"},
	} {
		if _, err := Parse(args); err != nil {
			t.Errorf("Parse(%q): %v", args, err)
		}
	}
}

// The raw client's frames are valid: a length field, or an SRMP request
// (one-way with --oneway) of flag 1 whose sequence runs 1…255 and wraps,
// any run of frames taken in one slice.
func TestFrameRing(t *testing.T) {
	payload := bytes.Repeat([]byte{0xAB}, 40)
	for _, c := range []struct {
		codec  string
		oneway bool
		most   int
	}{{"srmp", false, 255}, {"srmp", true, 1}, {"lengthfield", false, 256}, {"lengthfield", false, 1}, {"none", false, 1}} {
		cfg := &Config{Codec: c.codec, Impl: "raw", Size: len(payload), OneWay: c.oneway, CountReplies: true}
		ring := newFrameRing(cfg, payload, c.most)
		pos, seq := 0, 0
		for i, k := 0, 1; i < 2000; i, k = i+k, k%c.most+1 {
			b := ring.take(&pos, k)
			if len(b) != k*cfg.Size {
				t.Fatalf("%+v: take %d: %d bytes", c, k, len(b))
			}
			for f := range k {
				frame := b[f*cfg.Size : (f+1)*cfg.Size]
				switch c.codec {
				case "none":
					if !bytes.Equal(frame, payload) {
						t.Fatalf("plain payload changed")
					}
					continue
				case "lengthfield":
					if n, _ := baseline.FrameLen(baseline.LengthField, frame); n != cfg.Size {
						t.Fatalf("length-field frame of %d bytes claims %d", cfg.Size, n)
					}
				case "srmp":
					seq = seq%255 + 1
					kind := byte(baseline.KindRequest)
					if c.oneway {
						kind = baseline.KindOneWay
					}
					if n, _ := baseline.FrameLen(baseline.SRMP, frame); n != cfg.Size || frame[0] != kind<<6|1 || int(frame[1]) != seq {
						t.Fatalf("%+v frame %d: header % x (want kind %d, flag 1, seq %d, length %d)", c, i+f, frame[:4], kind, seq, cfg.Size-4)
					}
				}
				if !bytes.Equal(frame[codecHeader(c.codec):], payload[codecHeader(c.codec):]) {
					t.Fatalf("%+v: payload changed", c)
				}
			}
		}
	}
}

// startTestServer runs a load server of impl in this process.
func startTestServer(t *testing.T, args ...string) *echoServer {
	t.Helper()
	cfg, err := Parse(append([]string{"--server"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startServer(&cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// The raw clients drive both servers with each codec in each mode: the
// counting one (--count-replies) windowed pipelines, round trips and
// one-way runs, the matching one (baseline.Client) windowed pipelines and
// round trips. Windowed pipelines get every reply back, round trips
// record latencies, one-way runs report what they sent (and nothing
// received) over the time they spent sending; the server counted every
// byte the client sent (the counting client's priming included: the
// matching one, as lifenet's codec client, primes nothing).
func TestRawCodecClientBothServers(t *testing.T) {
	leakcheck.Check(t)
	const size = 32
	for _, codec := range []string{"lengthfield", "srmp"} {
		for _, impl := range []string{"lifenet", "raw"} {
			for _, client := range []string{"count", "match"} {
				modes := [][]string{{"--mode", "pipeline"}, {"--mode", "roundtrip"}, {"--oneway"}}
				if client == "match" {
					modes = modes[:2]
				}
				for _, mode := range modes {
					name := fmt.Sprintf("%s/%s-server/%s/%s", codec, impl, client, mode[len(mode)-1])
					common := append([]string{"--codec", codec, "--size", fmt.Sprint(size)}, mode...)
					srv := startTestServer(t, append([]string{"--impl", impl}, common...)...)
					args := append([]string{"--remote", srv.addr.String(), "--impl", "raw", "--clients", "2", "--seconds", "0.3", "--warmup", "0", "--json"}, common...)
					if client == "count" {
						args = append(args, "--count-replies")
					}
					var out, errOut bytes.Buffer
					code := Main(context.Background(), args, &out, &errOut)
					if code != 0 {
						srv.close()
						t.Fatalf("%s: exit %d: %s", name, code, errOut.String())
					}
					s := summaryOf(t, out.String())
					if s.ConnErrors != 0 || s.SentBytes == 0 && s.LatencyCount == 0 {
						t.Errorf("%s: %+v", name, s)
					}
					wantReplies := map[string]string{"count": "counted", "match": "matched"}[client]
					if s.Mode == "oneway" {
						wantReplies = ""
					}
					if s.Replies != wantReplies {
						t.Errorf("%s: replies %q, want %q", name, s.Replies, wantReplies)
					}
					switch s.Mode {
					case "pipeline":
						want := 255
						if codec == "lengthfield" && client == "count" {
							want = 256
						}
						if s.RecvBytes == 0 || s.IntegrityDiff == nil || *s.IntegrityDiff != 0 || s.RecvBytes != s.SentBytes || s.Window != want || s.MsgsPerSec <= 0 {
							t.Errorf("%s: replies missing or window wrong: %+v", name, s)
						}
					case "roundtrip":
						if s.LatencyCount == 0 || s.P50 <= 0 {
							t.Errorf("%s: no round trips: %+v", name, s)
						}
					case "oneway":
						if s.RecvBytes != 0 || s.IntegrityDiff != nil || s.MsgsPerSec <= 0 || s.Elapsed < 0.3 || s.Elapsed > 2 {
							t.Errorf("%s: one-way summary %+v", name, s)
						}
					}
					if s.Mode != "roundtrip" { // the server got every frame sent, and the counting client's prime
						// It counts what it reads on its own goroutines, which
						// may still be reading when the client has returned
						// (one-way runs get no echo to prove anything arrived).
						want := s.SentBytes
						if client == "count" {
							want += uint64(primeCount(&Config{Size: size}) * size)
						}
						if !eventually(func() bool { return srv.bytes() == want }) {
							t.Errorf("%s: server counted %d bytes, client sent %d", name, srv.bytes(), want)
						}
					}
					srv.close()
				}
			}
		}
	}
}

// windowRun is a raw client run with an SRMP window of window frames of
// size bytes and a window of seconds, set up as RunClient sets it up
// (the prime left out).
func windowRun(t *testing.T, window, size int, seconds float64) *run {
	t.Helper()
	cfg, err := Parse([]string{"--impl", "raw", "--codec", "srmp", "--count-replies", "--window", fmt.Sprint(window), "--size", fmt.Sprint(size),
		"--clients", "1", "--seconds", fmt.Sprint(seconds), "--warmup", "0", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{cfg: &cfg, payload: bytes.Repeat([]byte{0x5A}, size)}
	if !r.windowed() {
		t.Fatalf("%+v is not a windowed run", cfg)
	}
	r.ring = newFrameRing(&cfg, r.payload, r.inFlight())
	r.payload = r.ring.buf[:size]
	return r
}

// quiet reports whether nothing arrives on c for 60 ms. Inside a synctest
// bubble that is exact, not a guess: the bubble's clock moves only once
// every goroutine is parked, and a client with anything left to send
// would be parked in a Write this Read takes at once.
func quiet(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(60 * time.Millisecond))
	defer c.SetReadDeadline(time.Time{})
	n, _ := c.Read(make([]byte, 1))
	return n == 0
}

// The raw client keeps exactly its window in flight: it sends window
// frames and stops; after k replies it sends exactly k more, and half a
// reply earns nothing. The peer is the other end of a net.Pipe inside a
// synctest bubble, so each of its writes is a read of its own on the
// client (the half reply really arrives alone) and every "nothing more
// comes" is checked when the client has done all it can. After its
// checks the peer answers what is owed, takes the refill, and holds its
// echoes until the run's window has closed: the client then sends
// nothing more and drains them. Every count is therefore exact.
func TestRawClientWindow(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		const window, size, seconds = 8, 24, 2.0
		r := windowRun(t, window, size, seconds)
		client, peer := net.Pipe()
		start := time.Now()
		windowEnd := start.Add(time.Duration(seconds * float64(time.Second)))
		var wg sync.WaitGroup
		wg.Go(func() {
			defer peer.Close()
			lazyPeer(t, peer, window, size, windowEnd)
		})
		r.pipeline(context.Background(), []clientConn{&rawConn{conn: client, buf: make([]byte, 64<<10)}})
		elapsed := time.Since(start)
		wg.Wait()

		// 8 frames, 3+1+8 refills during the checks, 8 for the owed
		// window: 28, every one answered.
		const frames = window + 3 + 1 + window + window
		s := r.summary(elapsed.Seconds(), false)
		if s.Window != window || s.SentBytes != frames*size || s.RecvBytes != frames*size || s.IntegrityDiff == nil || *s.IntegrityDiff != 0 || s.ConnErrors != 0 {
			t.Errorf("summary %+v; want %d frames of %d bytes sent and answered in a window of %d", s, frames, size, window)
		}
		// The last echoes come a second after the window closed.
		if s.DrainSeconds < 1 || s.DrainSeconds > 1.1 {
			t.Errorf("drain %.3f s, want 1 s (the peer's hold)", s.DrainSeconds)
		}
	})
}

// lazyPeer is TestRawClientWindow's server side on c.
func lazyPeer(t *testing.T, c net.Conn, window, size int, windowEnd time.Time) {
	first := make([]byte, window*size)
	if _, err := io.ReadFull(c, first); err != nil {
		t.Errorf("first window: %v", err)
		return
	}
	if !quiet(c) {
		t.Errorf("more than the window (%d frames) sent before any reply", window)
		return
	}
	for i := range window {
		frame := first[i*size : (i+1)*size]
		if frame[0] != 1 || int(frame[1]) != i+1 || int(binary.LittleEndian.Uint16(frame[2:])) != size-4 {
			t.Errorf("frame %d: header % x", i, frame[:4])
		}
	}
	var owed []byte
	for _, k := range []int{3, 1, window} {
		reply := make([]byte, k*size)
		copy(reply, first)
		// Reply in two pieces, cut inside a frame: the refill follows
		// complete replies only.
		c.Write(reply[:size/2])
		if !quiet(c) {
			t.Errorf("frames sent after half a reply")
			return
		}
		c.Write(reply[size/2:])
		more := make([]byte, k*size)
		if _, err := io.ReadFull(c, more); err != nil {
			t.Errorf("refill after %d replies: %v", k, err)
			return
		}
		if !quiet(c) {
			t.Errorf("more than %d frames sent after %d replies", k, k)
			return
		}
		owed = more
	}
	c.Write(owed) // the window still owed: the client refills it
	refill := make([]byte, window*size)
	if _, err := io.ReadFull(c, refill); err != nil {
		t.Errorf("refill after the owed window: %v", err)
		return
	}
	time.Sleep(time.Until(windowEnd) + time.Second) // the bubble's clock: the window closes meanwhile
	c.Write(refill)
	if n, _ := io.Copy(io.Discard, c); n != 0 { // until the client closes
		t.Errorf("%d bytes sent after the window closed", n)
	}
}
