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
	"time"

	"github.com/lifenet/lifenet/internal/leakcheck"
	"github.com/lifenet/lifenet/internal/rawnet"
)

func TestParseRawCodecFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--impl", "raw", "--codec", "srmp", "--size", "70000"},        // beyond the baseline's buffer
		{"--impl", "raw", "--codec", "lengthfield", "--size", "65537"}, // the largest length-field frame, one byte too many
		{"--impl", "raw", "--codec", "lengthfield", "--window", "257"},
		{"--impl", "raw", "--codec", "srmp", "--window", "256"},
		{"--impl", "raw", "--window", "8"}, // a window needs a codec
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("Parse(%q) accepted", args)
		}
	}
	for _, args := range [][]string{
		{"--impl", "raw", "--codec", "lengthfield", "--size", "65536", "--window", "256"},
		{"--impl", "lifenet", "--codec", "lengthfield", "--size", "65537"},
		{"--impl", "raw", "--codec", "srmp", "--size", "5", "--window", "1"},
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
		cfg := &Config{Codec: c.codec, Impl: "raw", Size: len(payload), OneWay: c.oneway}
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
					if n, _ := rawnet.FrameLen(rawnet.LengthField, frame); n != cfg.Size {
						t.Fatalf("length-field frame of %d bytes claims %d", cfg.Size, n)
					}
				case "srmp":
					seq = seq%255 + 1
					kind := byte(rawnet.KindRequest)
					if c.oneway {
						kind = rawnet.KindOneWay
					}
					if n, _ := rawnet.FrameLen(rawnet.SRMP, frame); n != cfg.Size || frame[0] != kind<<6|1 || int(frame[1]) != seq {
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

// The raw client drives both servers with each codec in each mode:
// windowed pipelines get every reply back, round trips record latencies,
// one-way runs report what they sent (and nothing received) over the time
// they spent sending; the server counted every byte the client sent.
func TestRawCodecClientBothServers(t *testing.T) {
	leakcheck.Check(t)
	const size = 32
	for _, codec := range []string{"lengthfield", "srmp"} {
		for _, impl := range []string{"lifenet", "raw"} {
			for _, mode := range [][]string{{"--mode", "pipeline"}, {"--mode", "roundtrip"}, {"--oneway"}} {
				name := fmt.Sprintf("%s/%s-server/%s", codec, impl, mode[len(mode)-1])
				common := append([]string{"--codec", codec, "--size", fmt.Sprint(size)}, mode...)
				srv := startTestServer(t, append([]string{"--impl", impl}, common...)...)
				args := append([]string{"--remote", srv.addr.String(), "--impl", "raw", "--clients", "2", "--seconds", "0.3", "--warmup", "0", "--json"}, common...)
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
				switch s.Mode {
				case "pipeline":
					want := 256
					if codec == "srmp" {
						want = 255
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
				if s.Mode != "roundtrip" { // the server got the prime and every frame sent
					want := s.SentBytes + uint64(primeCount(&Config{Size: size})*size)
					for deadline := time.Now().Add(3 * time.Second); srv.bytes() != want && time.Now().Before(deadline); {
						time.Sleep(5 * time.Millisecond)
					}
					if got := srv.bytes(); got != want {
						t.Errorf("%s: server counted %d bytes, client sent %d (prime included)", name, got, want)
					}
				}
				srv.close()
			}
		}
	}
}

// lazyServer holds the replies back to check the raw client's window: the
// first connection (the load's) must send exactly window frames and stop;
// after k replies it must send exactly k more. Then it echoes as usual.
// Later connections (the prime's) are echoed.
func lazyServer(t *testing.T, window, size int, check func(c net.Conn, window, size int)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for i := 0; ; i++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				if i == 0 {
					check(c, window, size)
				}
				io.Copy(c, c)
			})
		}
	})
	return l.Addr().String()
}

// quiet reports whether nothing arrives on c for a while.
func quiet(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(60 * time.Millisecond))
	defer c.SetReadDeadline(time.Time{})
	n, _ := c.Read(make([]byte, 1))
	return n == 0
}

func TestRawClientWindow(t *testing.T) {
	leakcheck.Check(t)
	const window, size = 8, 24
	var failures []string
	var mu sync.Mutex
	fail := func(format string, a ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	check := func(c net.Conn, window, size int) {
		first := make([]byte, window*size)
		if _, err := io.ReadFull(c, first); err != nil {
			fail("first window: %v", err)
			return
		}
		if !quiet(c) {
			fail("more than the window (%d frames) sent before any reply", window)
			return
		}
		for i := range window {
			frame := first[i*size : (i+1)*size]
			if frame[0] != 1 || int(frame[1]) != i+1 || int(binary.LittleEndian.Uint16(frame[2:])) != size-4 {
				fail("frame %d: header % x", i, frame[:4])
			}
		}
		var owed []byte
		for _, k := range []int{3, 1, window} {
			reply := make([]byte, k*size)
			copy(reply, first)
			// Reply in two pieces, cut inside a frame: the refill follows
			// complete replies only.
			c.Write(reply[:size/2])
			time.Sleep(10 * time.Millisecond)
			c.Write(reply[size/2:])
			more := make([]byte, k*size)
			if _, err := io.ReadFull(c, more); err != nil {
				fail("refill after %d replies: %v", k, err)
				return
			}
			if !quiet(c) {
				fail("more than %d frames sent after %d replies", k, k)
				return
			}
			owed = more
		}
		c.Write(owed) // the window still owed; io.Copy answers the rest
	}
	addr := lazyServer(t, window, size, check)
	args := []string{"--remote", addr, "--impl", "raw", "--codec", "srmp", "--window", fmt.Sprint(window), "--size", fmt.Sprint(size),
		"--clients", "1", "--seconds", "0.8", "--warmup", "0", "--json"}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}
	s := summaryOf(t, out.String())
	if s.Window != window || s.IntegrityDiff == nil || *s.IntegrityDiff != 0 || s.RecvBytes != s.SentBytes || s.SentBytes < uint64(3*window*size) {
		t.Errorf("summary %+v", s)
	}
}
