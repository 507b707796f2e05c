package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/tcpserver"
)

// wrongSeqServer answers every SRMP request with a reply whose sequence
// number is the request's plus one: a server a caller must not trust.
// It stops when the test ends.
func wrongSeqServer(t *testing.T) string {
	t.Helper()
	return tcpserver.Start(t, func(c net.Conn) {
		baseline.ServeConn(c, baseline.SRMP, func(w *bufio.Writer, frame []byte) {
			w.WriteByte(baseline.KindReply<<6 | frame[0]&0x3F)
			w.WriteByte(frame[1] + 1)
			w.Write(frame[2:])
		}, nil)
		c.Close()
	})
}

// The baseline's codec client matches every reply to its request by
// sequence number, as lifenet's does: against a server whose replies
// carry the wrong number, windowed (one in flight, so the number matches
// nothing) and serial runs fail naming the unmatched reply. The counting
// client (--count-replies), which only counts reply bytes, cannot tell.
func TestBaselineCodecClientMatchesBySequence(t *testing.T) {
	leakcheck.Check(t)
	addr := wrongSeqServer(t)
	common := []string{"--remote", addr, "--impl", "raw", "--codec", "srmp", "--size", "32", "--clients", "1", "--seconds", "0.3", "--warmup", "0", "--json"}
	for _, mode := range [][]string{{"--mode", "pipeline", "--window", "1"}, {"--mode", "roundtrip"}} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), append(append([]string{}, common...), mode...), &out, &errOut)
		if code != 1 || !strings.Contains(errOut.String(), baseline.ErrUnmatched.Error()) {
			t.Errorf("%q against wrong sequence numbers: exit %d, stderr %q; want 1 and %q", mode, code, errOut.String(), baseline.ErrUnmatched)
		}
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), append(append([]string{}, common...), "--mode", "pipeline", "--window", "1", "--count-replies"), &out, &errOut); code != 0 {
		t.Errorf("the counting client: exit %d, %s", code, errOut.String())
	} else if s := summaryOf(t, out.String()); s.Replies != "counted" || s.RecvBytes == 0 {
		t.Errorf("the counting client: %+v", s)
	}
}

// keepWindow bounds the drain: when the replies of a window stop coming,
// it ends the connection after drainPatience (every request in flight
// then fails through its callback) and reports the stall; a failed
// request's error is the run's. The clock is synctest's: the 15 s pass at
// once.
func TestKeepWindowBoundsTheDrain(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		r := &run{cfg: &Config{Codec: "srmp", Size: 32}, payload: make([]byte, 32)}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var f *silentWindow
		start := time.Now()
		err := r.keepWindow(ctx, 4, func(done func(error)) windowClient {
			f = &silentWindow{done: done}
			return f
		})
		if err == nil || !strings.Contains(err.Error(), "4 replies missing") || f.sent != 4 || !f.aborted {
			t.Fatalf("keepWindow: %v after %d requests (aborted %v); want the stall of 4 reported and the connection ended", err, f.sent, f.aborted)
		}
		if d := time.Since(start); d != 50*time.Millisecond+drainPatience {
			t.Errorf("gave up after %v, want the window and drainPatience", d)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		r := &run{cfg: &Config{Codec: "srmp", Size: 32}, payload: make([]byte, 32)}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		boom := errors.New("boom")
		err := r.keepWindow(ctx, 4, func(done func(error)) windowClient { return &silentWindow{done: done, answer: boom} })
		if !errors.Is(err, boom) {
			t.Fatalf("keepWindow: %v, want the failed request's error", err)
		}
	})
}

// silentWindow never answers, unless answer is set: then it fails every
// request at once; abort fails what is in flight.
type silentWindow struct {
	done     func(error)
	answer   error
	sent     int
	inFlight int
	aborted  bool
}

func (s *silentWindow) send([]byte) error {
	s.sent++
	if s.answer != nil {
		s.done(s.answer)
		return nil
	}
	s.inFlight++
	return nil
}

func (s *silentWindow) batch(f func()) error { f(); return nil }

func (s *silentWindow) abort() {
	s.aborted = true
	for ; s.inFlight > 0; s.inFlight-- {
		s.done(net.ErrClosed)
	}
}
