package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// expectedReply is what a codec server answers to frame: an SRMP request
// comes back as a reply (kind 2) with its flag, sequence and payload; a
// length-field frame comes back as it is.
func expectedReply(codec string, frame []byte) []byte {
	out := append([]byte(nil), frame...)
	if codec == "srmp" {
		out[0] = baseline.KindReply<<6 | out[0]&0x3F
	}
	return out
}

// Both UDP codec servers, lifenet's codec server and the baseline's datagram
// loop, answer the raw client's frames alike, byte for byte: each frame of
// a datagram holding three gets a reply datagram of its own, in order; a
// datagram too short for a frame header gets no reply (the next reply is
// the one to the request after it). (A datagram with whole frames before
// a cut one is not compared: the baseline drops it whole; lifenet's codec frames
// it as it goes and ends the peer's session at the cut, so whether replies
// to the whole frames leave first is up to the codec.)
func TestUDPCodecServersAnswerAlike(t *testing.T) {
	leakcheck.Check(t)
	for _, codec := range []string{"srmp", "lengthfield"} {
		for _, impl := range []string{"lifenet", "raw"} {
			name := codec + "/" + impl
			srv := startTestServer(t, "--udp", "--impl", impl, "--codec", codec, "--size", "40")
			cfg := &Config{Codec: codec, Impl: "raw", UDP: true, Size: 40}
			payload := bytes.Repeat([]byte{0xC3}, cfg.Size)
			ring := newFrameRing(cfg, payload, 3)
			pos := 0
			three := ring.take(&pos, 3)
			single := ring.take(&pos, 1)
			c, err := net.Dial("udp", srv.addr.String())
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range [][]byte{three, three[:1], single} {
				if _, err := c.Write(d); err != nil {
					t.Fatal(err)
				}
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 2048)
			for i := range 4 {
				want := expectedReply(codec, three[min(i, 2)*cfg.Size:][:cfg.Size])
				if i == 3 {
					want = expectedReply(codec, single)
				}
				n, err := c.Read(buf)
				if err != nil {
					t.Fatalf("%s: reply %d: %v", name, i, err)
				}
				if !bytes.Equal(buf[:n], want) {
					t.Fatalf("%s: reply %d is % x, want % x", name, i, buf[:n], want)
				}
			}
			c.Close()
			srv.close()
		}
	}
}

// The raw UDP client drives both servers with each codec in each mode
// (asked for with either --impl: over UDP the codec client is the raw one
// for both): round trips with 1 and 4 clients record latencies, windowed
// pipelines get their replies back, one-way runs report what they sent;
// every server counted exactly the prime and every datagram sent (one-way:
// some of them, never more).
func TestUDPCodecRuns(t *testing.T) {
	leakcheck.Check(t)
	const size = 32
	for _, codec := range []string{"srmp", "lengthfield"} {
		for _, impl := range []string{"lifenet", "raw"} {
			for _, mode := range [][]string{{"--mode", "roundtrip", "--clients", "1"}, {"--mode", "roundtrip", "--clients", "4"},
				{"--mode", "pipeline", "--window", "8", "--clients", "2"}, {"--oneway", "--clients", "2"}} {
				name := fmt.Sprintf("%s/%s/%v", codec, impl, mode)
				common := append([]string{"--udp", "--codec", codec, "--size", fmt.Sprint(size), "--impl", impl}, mode...)
				srv := startTestServer(t, common...)
				args := append([]string{"--remote", srv.addr.String(), "--seconds", "0.3", "--warmup", "0", "--json"}, common...)
				var out, errOut bytes.Buffer
				if code := Main(context.Background(), args, &out, &errOut); code != 0 {
					srv.close()
					t.Fatalf("%s: exit %d: %s", name, code, errOut.String())
				}
				s := summaryOf(t, out.String())
				wantClient := ""
				if impl == "lifenet" {
					wantClient = "raw"
				}
				if s.ConnErrors != 0 || s.SentBytes == 0 || s.Protocol != "udp" || s.Codec != codec || s.Impl != impl || s.Client != wantClient {
					t.Errorf("%s: %+v", name, s)
				}
				switch s.Mode {
				case "roundtrip":
					// One request in flight per client: loopback loses none,
					// so every request but the last of each client (cut by
					// the window) was answered.
					if s.LatencyCount == 0 || s.P50 > s.P99 || s.SentBytes < uint64(s.LatencyCount)*size ||
						s.SentBytes > uint64(s.LatencyCount+int64(s.Clients))*size {
						t.Errorf("%s: %d round trips for %d bytes sent: %+v", name, s.LatencyCount, s.SentBytes, s)
					}
				case "pipeline":
					if s.Window != 8 || s.RecvBytes == 0 || s.RecvBytes > s.SentBytes || s.IntegrityDiff == nil || *s.IntegrityDiff < 0 {
						t.Errorf("%s: replies %+v", name, s)
					}
				case "oneway":
					if s.RecvBytes != 0 || s.MsgsPerSec <= 0 {
						t.Errorf("%s: one-way summary %+v", name, s)
					}
				}
				prime := uint64(primeCount(&Config{Size: size}) * size)
				want := s.SentBytes + prime
				if s.Mode == "oneway" {
					// Senders that never wait outrun one receiver: loss is
					// expected. The server counted some of the load and
					// never more than was sent.
					if !eventually(func() bool { return srv.bytes() > prime }) || srv.bytes() > want {
						t.Errorf("%s: server counted %d bytes, client sent %d (prime included)", name, srv.bytes(), want)
					}
				} else if !eventually(func() bool { return srv.bytes() == want }) {
					t.Errorf("%s: server counted %d bytes, client sent %d (prime included)", name, srv.bytes(), want)
				}
				srv.close()
			}
		}
	}
}

// A UDP window whose requests are all lost does not stall for good: after
// udpStall without a reply the client sends a whole window again. The
// server here drops the first window of each sender and answers the rest,
// so without the refill the run would get no reply at all.
func TestUDPWindowRefillsAfterLoss(t *testing.T) {
	leakcheck.Check(t)
	const window, size = 4, 24
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer pc.Close()
	wg.Go(func() {
		seen := map[string]int{}
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if seen[from.String()]++; seen[from.String()] <= window {
				continue
			}
			buf[0] = baseline.KindReply<<6 | buf[0]&0x3F
			pc.WriteToUDP(buf[:n], from)
		}
	})
	args := []string{"--remote", pc.LocalAddr().String(), "--udp", "--codec", "srmp", "--mode", "pipeline", "--window", fmt.Sprint(window),
		"--size", fmt.Sprint(size), "--clients", "1", "--seconds", "1", "--warmup", "0", "--json"}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	s := summaryOf(t, out.String())
	if s.RecvBytes == 0 || s.IntegrityDiff == nil || *s.IntegrityDiff < window || s.LossPct <= 0 || s.ConnErrors != 0 {
		t.Fatalf("summary %+v: want replies after the lost first window (at least %d frames short)", s, window)
	}
	// Each reply is an SRMP reply frame of the request's size.
	if s.RecvBytes%size != 0 {
		t.Errorf("received %d bytes: not whole %d-byte replies", s.RecvBytes, size)
	}
}
