package baseline_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifenet/lifenet/internal/baseline"
)

// datagrams records each Write as one datagram; the write numbered failAt
// (1-based; 0: none) fails.
type datagrams struct {
	out    [][]byte
	failAt int
	tries  int
}

var errSend = errors.New("send failed")

func (d *datagrams) Write(b []byte) (int, error) {
	d.tries++
	if d.tries == d.failAt {
		return 0, errSend
	}
	d.out = append(d.out, append([]byte(nil), b...))
	return len(b), nil
}

// handle runs HandleDatagram on d with f's echo (counting its calls) into
// a recorder.
func handle(f baseline.Format, d []byte, failAt int) (rec *datagrams, frames, calls int, err error) {
	rec = &datagrams{failAt: failAt}
	echo := baseline.Echo(f)
	h := func(w *bufio.Writer, frame []byte) { calls++; echo(w, frame) }
	frames, err = baseline.HandleDatagram(d, f, h, bufio.NewWriterSize(rec, baseline.BufferSize))
	return rec, frames, calls, err
}

// A datagram of several frames: every frame is handled, in order, and
// every answer is a datagram of its own (an SRMP request's reply carries
// its sequence and payload; a one-way frame gets none; the long header is
// read); a length-field frame, the empty one included, comes back as it is.
func TestDatagramOfSeveralFrames(t *testing.T) {
	req1, req2 := srmpFrame(baseline.KindRequest, 7, "one", false), srmpFrame(baseline.KindRequest, 8, "", false)
	long := srmpFrame(baseline.KindRequest, 9, "long header", true)
	one := srmpFrame(baseline.KindOneWay, 10, "no answer", false)
	rec, frames, calls, err := handle(baseline.SRMP, cat(req1, one, req2, long), 0)
	if err != nil || frames != 4 || calls != 4 {
		t.Fatalf("srmp: %d frames, %d handler calls, %v; want 4, 4, nil", frames, calls, err)
	}
	want := [][]byte{replyOf(req1), replyOf(req2), replyOf(long)}
	if len(rec.out) != len(want) {
		t.Fatalf("srmp: %d reply datagrams, want %d", len(rec.out), len(want))
	}
	for i := range want {
		if !bytes.Equal(rec.out[i], want[i]) {
			t.Errorf("srmp reply %d: % x, want % x", i, rec.out[i], want[i])
		}
	}
	lf := [][]byte{lfFrame("alpha"), lfFrame(""), lfFrame("gamma")}
	rec, frames, _, err = handle(baseline.LengthField, cat(lf...), 0)
	if err != nil || frames != 3 || len(rec.out) != 3 {
		t.Fatalf("lengthfield: %d frames, %d datagrams, %v", frames, len(rec.out), err)
	}
	for i := range lf {
		if !bytes.Equal(rec.out[i], lf[i]) {
			t.Errorf("lengthfield reply %d: % x, want % x", i, rec.out[i], lf[i])
		}
	}
	// No handler: frames are counted, nothing is written.
	w := &datagrams{}
	if n, err := baseline.HandleDatagram(cat(req1, one), baseline.SRMP, nil, bufio.NewWriter(w)); n != 2 || err != nil || w.tries != 0 {
		t.Errorf("count only: %d frames, %v, %d writes", n, err, w.tries)
	}
	// An empty datagram holds no frame.
	if rec, frames, calls, err := handle(baseline.SRMP, nil, 0); frames != 0 || calls != 0 || err != nil || rec.tries != 0 {
		t.Errorf("empty datagram: %d frames, %d calls, %v", frames, calls, err)
	}
}

// A datagram that is not whole frames back to back is dropped whole: no
// frame of it reaches the handler (not even the valid ones before the
// fault) and nothing is sent.
func TestMalformedDatagramDropped(t *testing.T) {
	req := srmpFrame(baseline.KindRequest, 1, "valid", false)
	negative := binary.LittleEndian.AppendUint32([]byte{0x01, 2, 0xFF, 0xFF}, 0x80000000)
	for _, c := range []struct {
		name string
		f    baseline.Format
		d    []byte
		want error
	}{
		{"srmp frame then a cut one", baseline.SRMP, cat(req, req[:6]), baseline.ErrPartialFrame},
		{"srmp header cut", baseline.SRMP, req[:3], baseline.ErrPartialFrame},
		{"srmp length beyond the datagram", baseline.SRMP, req[:len(req)-1], baseline.ErrPartialFrame},
		{"srmp long header cut", baseline.SRMP, cat(req, srmpFrame(baseline.KindRequest, 2, "x", true)[:6]), baseline.ErrPartialFrame},
		{"srmp negative long length", baseline.SRMP, cat(req, negative), baseline.ErrBadLength},
		{"srmp 2 GiB declared", baseline.SRMP, binary.LittleEndian.AppendUint32([]byte{0x01, 3, 0xFF, 0xFF}, 0x7FFFFFFF), baseline.ErrPartialFrame},
		{"lengthfield one byte", baseline.LengthField, []byte{5}, baseline.ErrPartialFrame},
		{"lengthfield trailing byte", baseline.LengthField, cat(lfFrame("ok"), []byte{1}), baseline.ErrPartialFrame},
		{"unknown format", baseline.Format(9), req, baseline.ErrFormat},
	} {
		rec, frames, calls, err := handle(c.f, c.d, 0)
		if !errors.Is(err, c.want) || !baseline.Malformed(err) || frames != 0 || calls != 0 || rec.tries != 0 {
			t.Errorf("%s: err %v (want %v), %d frames, %d handler calls, %d datagrams sent", c.name, err, c.want, frames, calls, rec.tries)
		}
	}
}

// A reply that cannot be sent ends the datagram: the error is the write's
// (not a malformed datagram), and the frames after it are not answered.
func TestDatagramReplyFails(t *testing.T) {
	reqs := cat(srmpFrame(baseline.KindRequest, 1, "a", false), srmpFrame(baseline.KindRequest, 2, "b", false), srmpFrame(baseline.KindRequest, 3, "c", false))
	rec, frames, calls, err := handle(baseline.SRMP, reqs, 2)
	if !errors.Is(err, errSend) || baseline.Malformed(err) || frames != 3 || calls != 2 || len(rec.out) != 1 {
		t.Fatalf("err %v, %d frames, %d handler calls, %d sent; want errSend, 3, 2, 1", err, frames, calls, len(rec.out))
	}
}

// dialUDP connects a client socket to addr with a generous read deadline.
func dialUDP(t *testing.T, addr net.Addr) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, addr.(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c
}

func readDatagram(t *testing.T, c *net.UDPConn) []byte {
	t.Helper()
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// The UDP server: a datagram of three frames from one sender gets its two
// requests answered, a datagram each, to that sender; a malformed datagram
// is dropped unanswered and counted (the next reply the sender sees is the
// one to its following request: the loop is sequential); a second sender
// gets its own reply; Close ends the loop.
func TestServeDatagrams(t *testing.T) {
	defer goleak.VerifyNone(t)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	srv := baseline.ServeDatagrams(pc, baseline.SRMP, baseline.Echo(baseline.SRMP))
	defer srv.Close()
	a, b := dialUDP(t, srv.Addr()), dialUDP(t, srv.Addr())
	req1, req2 := srmpFrame(baseline.KindRequest, 1, "first", false), srmpFrame(baseline.KindRequest, 2, "second", false)
	several := cat(req1, srmpFrame(baseline.KindOneWay, 3, "quiet", false), req2)
	bad := cat(req1, req2[:5])
	req4 := srmpFrame(baseline.KindRequest, 4, "after the bad one", false)
	reqB := srmpFrame(baseline.KindRequest, 5, "from b", false)
	for _, d := range [][]byte{several, bad, req4} {
		if _, err := a.Write(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Write(reqB); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]byte{replyOf(req1), replyOf(req2), replyOf(req4)} {
		if got := readDatagram(t, a); !bytes.Equal(got, want) {
			t.Fatalf("a's reply %d: % x, want % x", i, got, want)
		}
	}
	if got := readDatagram(t, b); !bytes.Equal(got, replyOf(reqB)) {
		t.Fatalf("b's reply: % x", got)
	}
	// The counters are added after each datagram's replies are sent:
	// wait (bounded) for the last one's.
	wantBytes := uint64(len(several) + len(bad) + len(req4) + len(reqB))
	for deadline := time.Now().Add(10 * time.Second); srv.Frames.Load() < 5 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if d, f, m, by, we := srv.Datagrams.Load(), srv.Frames.Load(), srv.Malformed.Load(), srv.Bytes.Load(), srv.WriteErrors.Load(); d != 4 || f != 5 || m != 1 || by != wantBytes || we != 0 {
		t.Fatalf("datagrams %d, frames %d, malformed %d, bytes %d, write errors %d; want 4, 5, 1, %d, 0", d, f, m, by, wantBytes, we)
	}
}
