// Command srmpcall is the plainest SRMP caller the standard library
// allows: a goroutine per connection writes one request frame, reads the
// one frame that answers it, then writes the next; no multiplexing, no
// matching, no pooling. Like lifenet rpcload it times
// each call into a per-connection HDR histogram, so that the two clients
// pay the same for measuring. bench/floor.sh drives the echo
// servers and lifenet's server with it, so that they are compared under
// one client, and its CPU per call is the floor for lifenet's client.
//
// The request is an RPC call with no arguments, as lifenet's client sends
// it (NewLife's body: the action's name and nothing after it); an echo
// server answers it with the same bytes, lifenet serve with the action's
// result. Any frame but an error reply counts as the answer, so any server
// that answers each request with one frame will do.
//
//	srmpcall --remote HOST:PORT [--conns 100] [--seconds 4] [--warmup 1] [--action Bench/NoArg] [--cpuprofile FILE]
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lifenet/lifenet/internal/baseline"
)

func main() {
	remote := flag.String("remote", "", "server address (host:port)")
	conns := flag.Int("conns", 100, "connections, one call in flight on each")
	seconds := flag.Float64("seconds", 4, "measured window in seconds")
	warmup := flag.Float64("warmup", 1, "seconds of calls before the window")
	action := flag.String("action", "Bench/NoArg", "the action called")
	profile := flag.String("cpuprofile", "", "write this process's CPU profile (warm-up and window) here")
	flag.Parse()
	switch {
	case *remote == "":
		fail(2, errors.New("--remote is required"))
	case *conns < 1 || *conns > 10000:
		fail(2, errors.New("--conns wants 1 to 10000"))
	case *seconds <= 0 || *seconds > 3600 || *warmup < 0 || *warmup > 600:
		fail(2, errors.New("--seconds wants (0, 3600], --warmup [0, 600]"))
	case !validAction(*action):
		fail(2, errors.New("--action wants 1 to 127 printable ASCII bytes"))
	}
	stop, err := startProfile(*profile)
	if err != nil {
		fail(1, err)
	}
	sum, err := run(*remote, *conns, dur(*warmup), dur(*seconds), request(*action))
	if perr := stop(); err == nil {
		err = perr
	}
	if err != nil {
		fail(1, err)
	}
	line, _ := json.Marshal(sum)
	fmt.Printf("SUMMARY: %s\n", line)
}

// startProfile starts a CPU profile into path (none when path is empty)
// and returns what ends it.
func startProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func dur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "srmpcall:", err)
	os.Exit(code)
}

// validAction: a name whose length fits the body's one-byte (7-bit)
// length prefix, in printable ASCII (docs/PROTOCOL.md §5.1).
func validAction(a string) bool {
	if len(a) == 0 || len(a) > 127 {
		return false
	}
	for i := range len(a) {
		if a[i] <= ' ' || a[i] > '~' {
			return false
		}
	}
	return true
}

// request is the SRMP frame of an RPC call of action without arguments:
// header (request, flag 1, sequence 1, length), then the name after its
// length byte.
func request(action string) []byte {
	f := []byte{0x01, 0x01, 0, 0}
	binary.LittleEndian.PutUint16(f[2:], uint16(1+len(action)))
	f = append(f, byte(len(action)))
	return append(f, action...)
}

type summary struct {
	Conns              int     `json:"conns"`
	Calls              uint64  `json:"calls"`
	CallsPerSec        float64 `json:"callsPerSec"`
	ClientCPUUsPerCall float64 `json:"clientCpuUsPerCall"`
	P50Us              float64 `json:"p50Us"`
	P99Us              float64 `json:"p99Us"`
}

// newHistogram records call times in nanoseconds, up to a minute.
func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000_000, 3) }

// run calls over conns connections for warm, then counts the calls and
// the process's CPU over win. Every connection's reads and writes are
// bounded by one deadline past the end of the run.
func run(addr string, conns int, warm, win time.Duration, req []byte) (summary, error) {
	cs := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for range conns {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return summary{}, err
		}
		cs = append(cs, c)
	}
	end := time.Now().Add(warm + win + 5*time.Second)
	for _, c := range cs {
		c.SetDeadline(end)
	}
	var phase atomic.Int32 // 0 warm-up, 1 measuring, 2 stop
	hists := make([]*hdrhistogram.Histogram, conns)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for i, c := range cs {
		hists[i] = newHistogram()
		wg.Go(func() {
			if err := callLoop(c, req, &phase, hists[i]); err != nil {
				errs <- fmt.Errorf("connection %d: %w", i, err)
			}
		})
	}
	time.Sleep(warm)
	r0 := cpu()
	phase.Store(1)
	start := time.Now()
	time.Sleep(win)
	phase.Store(2)
	elapsed, used := time.Since(start), cpu()-r0
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return summary{}, err
	}
	all := newHistogram()
	for _, h := range hists {
		all.Merge(h)
	}
	s := summary{Conns: conns, Calls: uint64(all.TotalCount())}
	if s.Calls == 0 {
		return s, errors.New("no call completed in the window")
	}
	s.CallsPerSec = round2(float64(s.Calls) / elapsed.Seconds())
	s.ClientCPUUsPerCall = round2(float64(used.Nanoseconds()) / 1e3 / float64(s.Calls))
	s.P50Us = round2(float64(all.ValueAtQuantile(50)) / 1e3)
	s.P99Us = round2(float64(all.ValueAtQuantile(99)) / 1e3)
	return s, nil
}

// callLoop writes req and reads one whole frame back, over and over,
// recording the time of the calls made while phase is 1 in h, until phase
// is 2.
func callLoop(c net.Conn, req []byte, phase *atomic.Int32, h *hdrhistogram.Histogram) error {
	buf := make([]byte, 64<<10)
	for {
		p := phase.Load()
		if p == 2 {
			return nil
		}
		t0 := time.Now()
		if _, err := c.Write(req); err != nil {
			return err
		}
		if err := readFrame(c, buf); err != nil {
			return err
		}
		if p == 1 {
			h.RecordValue(int64(time.Since(t0)))
		}
	}
}

// readFrame reads until buf holds one whole SRMP frame (its short or long
// header and the length it declares); one call is in flight, so nothing
// may follow it. An error reply fails the run: the server refused the
// call (an unknown --action, say), and counting it would measure that.
func readFrame(c net.Conn, buf []byte) error {
	have := 0
	for {
		m, err := c.Read(buf[have:])
		have += m
		size, ferr := baseline.FrameLen(baseline.SRMP, buf[:have]) // 0 until the header is in
		if ferr != nil {
			return ferr
		}
		if size > 0 {
			if have > size {
				return fmt.Errorf("%d bytes after the reply: more than one frame came back", have-size)
			}
			if have == size {
				if buf[0]>>6 == kindError {
					return fmt.Errorf("the server answered with an error reply: % x", buf[:min(have, 64)])
				}
				return nil
			}
			if size > len(buf) {
				return fmt.Errorf("a %d-byte reply: more than %d", size, len(buf))
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
}

// kindError is an SRMP error reply's kind (the header's top two bits).
const kindError = 3
