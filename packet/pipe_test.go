package packet_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

func newPipe(t *testing.T, cfg packet.PipeConfig) *packet.Pipe {
	t.Helper()
	p, err := packet.NewPipe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseRead) // releases whatever a failing test left behind
	return p
}

func flat(d packet.Segments) []byte {
	b := make([]byte, d.Len())
	d.CopyTo(b)
	return b
}

// shortCtx ends 30 ms from now. Inside a synctest bubble (its only use)
// that is the bubble's clock: the deadline passes only once every other
// goroutine of the bubble is parked, so a wait that ends with it has
// really found nothing to do, however loaded the machine.
func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// readAsync runs read (Read or ReadAtLeast of a pipe) on its own
// goroutine, the pipe's reader, and delivers the bytes it returned, or
// its error.
func readAsync(read func(context.Context) (packet.ReadResult, error)) <-chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		r, err := read(context.Background())
		ch <- readResult{flat(r.Data), err}
	}()
	return ch
}

type readResult struct {
	data []byte
	err  error
}

// notYet fails the test if the read behind ch has returned. Call it after
// synctest.Wait: the reader has then done all it can.
func notYet(t *testing.T, ch <-chan readResult, when string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: the read returned %q, %v; want it still waiting", when, r.data, r.err)
	default:
	}
}

func TestPipeAppendReadAdvance(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	p := newPipe(t, packet.DefaultPipeConfig())

	a := packet.Get(3)
	copy(a.Bytes(), "abc")
	if err := p.Append(ctx, a.Chain(packet.Wrap([]byte("de")))); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(ctx, []byte("fgh")); err != nil {
		t.Fatal(err)
	}
	r, err := p.Read(ctx)
	if err != nil || r.Completed || len(r.Data) != 3 || string(flat(r.Data)) != "abcdefgh" {
		t.Fatalf("Read = %q (%d segments, completed %v), %v", flat(r.Data), len(r.Data), r.Completed, err)
	}
	if err := p.Advance(4, 4); err != nil { // consumes "abc" and "d"
		t.Fatal(err)
	}
	r, err = p.Read(ctx)
	if err != nil || string(flat(r.Data)) != "efgh" || p.Len() != 4 {
		t.Fatalf("after Advance: %q, len %d, %v", flat(r.Data), p.Len(), err)
	}
	if err := p.Advance(4, 4); err != nil {
		t.Fatal(err)
	}
	if p.Len() != 0 {
		t.Fatalf("len %d after consuming all", p.Len())
	}
}

func TestPipeWriteCopiesAndPacksSmallWrites(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	p := newPipe(t, packet.DefaultPipeConfig())
	src := []byte("xy")
	for range 100 {
		p.Write(ctx, src)
	}
	src[0] = 'Z'
	r, _ := p.Read(ctx)
	if len(r.Data) != 1 || !bytes.Equal(flat(r.Data), bytes.Repeat([]byte("xy"), 100)) {
		t.Fatalf("%d segments, %q", len(r.Data), flat(r.Data))
	}
	big := bytes.Repeat([]byte{7}, 10000) // larger than one write buffer
	p.Write(ctx, big)
	r, _ = p.Read(ctx)
	if r.Data.Len() != 10200 || !bytes.Equal(flat(r.Data)[200:], big) {
		t.Fatalf("large write: %d bytes", r.Data.Len())
	}
}

// Bytes the reader has examined do not wake it again: it waits for new
// ones, however many times synctest.Wait lets everything else run.
func TestPipeExaminedBytesDoNotRewakeReader(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := newPipe(t, packet.DefaultPipeConfig())
		p.Write(ctx, []byte("abc"))
		p.Read(ctx)
		if err := p.Advance(0, 3); err != nil { // looked at all, needs more
			t.Fatal(err)
		}
		got := readAsync(p.Read)
		synctest.Wait()
		notYet(t, got, "nothing new written")
		p.Write(ctx, []byte("d"))
		if r := <-got; r.err != nil || string(r.data) != "abcd" {
			t.Fatalf("Read after new data = %q, %v", r.data, r.err)
		}
	})
}

// ReadAtLeast waits until the count is there: each one-byte write wakes it
// and it parks again, until the tenth.
func TestPipeReadAtLeast(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := newPipe(t, packet.DefaultPipeConfig())
		got := readAsync(func(ctx context.Context) (packet.ReadResult, error) { return p.ReadAtLeast(ctx, 10) })
		for i := range 10 {
			synctest.Wait() // the reader has seen the i bytes written so far
			notYet(t, got, fmt.Sprintf("%d of 10 bytes written", i))
			p.Write(ctx, []byte{byte('0' + i)})
		}
		if r := <-got; r.err != nil || string(r.data) != "0123456789" {
			t.Fatalf("ReadAtLeast(10) = %q, %v", r.data, r.err)
		}
	})
}

func TestPipeTakeFrame(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	p := newPipe(t, packet.DefaultPipeConfig())
	p.Append(ctx, packet.Wrap([]byte("0123")))
	p.Append(ctx, packet.Wrap([]byte("4567")))
	p.Write(ctx, []byte("89"))

	f, err := p.TakeFrame(6) // whole first segment moves, second is shared
	if err != nil || string(f.AppendTo(nil)) != "012345" || f.NumSegments() != 2 {
		t.Fatalf("TakeFrame(6) = %q in %d segments, %v", f.AppendTo(nil), f.NumSegments(), err)
	}
	f.Release()
	if p.Len() != 4 {
		t.Fatalf("len %d after frame", p.Len())
	}
	if _, err := p.TakeFrame(5); !errors.Is(err, packet.ErrShortPipe) {
		t.Fatalf("TakeFrame past the end = %v", err)
	}
	f, _ = p.TakeFrame(4)
	if string(f.AppendTo(nil)) != "6789" || p.Len() != 0 {
		t.Fatalf("second frame %q", f.AppendTo(nil))
	}
	// The frame owns a share of the pipe's write buffer: later writes must
	// not disturb it.
	p.Write(ctx, []byte("ab"))
	if string(f.AppendTo(nil)) != "6789" {
		t.Fatalf("frame changed by a later write: %q", f.AppendTo(nil))
	}
	f.Release()
	if f, _ := p.TakeFrame(0); f.Total() != 0 {
		t.Fatal("empty frame not empty")
	} else {
		f.Release()
	}
}

func TestPipeCloseWrite(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	for _, werr := range []error{nil, errors.New("peer reset")} {
		p := newPipe(t, packet.DefaultPipeConfig())
		p.Write(ctx, []byte("tail"))
		p.CloseWrite(werr)
		r, err := p.Read(ctx)
		if err != nil || !r.Completed || string(flat(r.Data)) != "tail" {
			t.Fatalf("first read after close = %q %v, %v", flat(r.Data), r.Completed, err)
		}
		p.Advance(2, 4) // a partial frame remains
		r, err = p.Read(ctx)
		want := werr
		if want == nil {
			want = io.EOF
		}
		if !errors.Is(err, want) || string(flat(r.Data)) != "il" {
			t.Fatalf("read at end = %q, %v; want the leftover and %v", flat(r.Data), err, want)
		}
		if _, err := p.Write(ctx, []byte("x")); !errors.Is(err, packet.ErrWriteAfterClose) {
			t.Fatalf("write after CloseWrite = %v", err)
		}
	}
}

func TestPipeCloseReadReleasesEverything(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	p := newPipe(t, packet.DefaultPipeConfig())
	p.Append(ctx, packet.Get(100))
	p.Write(ctx, []byte("abc"))
	p.CloseRead()
	p.CloseRead() // idempotent
	if err := p.Append(ctx, packet.Get(10)); !errors.Is(err, packet.ErrClosedPipe) {
		t.Fatalf("Append after CloseRead = %v", err)
	}
	if _, err := p.Write(ctx, []byte("x")); !errors.Is(err, packet.ErrClosedPipe) {
		t.Fatalf("Write after CloseRead = %v", err)
	}
	if _, err := p.Read(ctx); !errors.Is(err, packet.ErrClosedPipe) {
		t.Fatalf("Read after CloseRead = %v", err)
	}
	// leakcheck proves the packets above were released.
}

// The bubble's clock and synctest.Wait order the steps: "the writer stays
// parked" is the writer durably blocked, not a sleep that is long enough.
func TestPipeBackPressureHysteresis(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, testPipeBackPressureHysteresis)
}

func testPipeBackPressureHysteresis(t *testing.T) {
	ctx := context.Background()
	p := newPipe(t, packet.PipeConfig{PauseThreshold: 100, ResumeThreshold: 50})

	wrote := make(chan int, 100)
	go func() {
		for i := range 30 {
			if _, err := p.Write(ctx, make([]byte, 10)); err != nil {
				return
			}
			wrote <- i + 1
		}
		close(wrote)
	}()
	synctest.Wait() // the writer is parked
	if n := p.Len(); !p.Paused() || n != 100 {
		t.Fatalf("writer not held at the pause threshold: %d bytes buffered", n)
	}
	p.Read(ctx)
	p.Advance(40, 40) // 60 left: above resume, still paused
	synctest.Wait()
	if !p.Paused() || p.Len() != 60 {
		t.Fatalf("resumed above the resume threshold: paused %v, len %d", p.Paused(), p.Len())
	}
	p.Read(ctx)
	p.Advance(20, 20) // 40 left: below resume
	synctest.Wait()   // the writer resumed and is parked again
	if p.Len() <= 40 {
		t.Fatalf("the writer did not resume below the resume threshold: len %d", p.Len())
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for consumed := 60; consumed < 300; {
		r, err := p.Read(rctx)
		if err != nil {
			t.Fatalf("after %d bytes: %v", consumed, err)
		}
		if r.Data.Len() > 100 {
			t.Fatalf("%d bytes buffered, above the pause threshold", r.Data.Len())
		}
		p.Advance(r.Data.Len(), r.Data.Len())
		consumed += r.Data.Len()
	}
	total := 0
	for n := range wrote {
		total = n
	}
	if total != 30 {
		t.Fatalf("writer finished %d of 30 writes", total)
	}
}

// A reader that needs more than the pause threshold must not deadlock with
// a paused writer.
func TestPipeReaderReleasesPauseWhenStarved(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	p := newPipe(t, packet.PipeConfig{PauseThreshold: 10, ResumeThreshold: 5})
	go func() {
		for range 4 {
			p.Write(ctx, make([]byte, 10))
		}
	}()
	r, err := p.ReadAtLeast(ctx, 40)
	if err != nil || r.Data.Len() != 40 {
		t.Fatalf("ReadAtLeast(40) = %d, %v", r.Data.Len(), err)
	}
}

func TestPipeCancellation(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, testPipeCancellation)
}

func testPipeCancellation(t *testing.T) {
	ctx := context.Background()
	p := newPipe(t, packet.PipeConfig{PauseThreshold: 4, ResumeThreshold: 2})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Read(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read on canceled ctx = %v", err)
	}
	// A canceled write-side wait keeps the data: ownership already moved.
	if _, err := p.Write(cctx, []byte("abcd")); !errors.Is(err, context.Canceled) {
		t.Fatalf("paused Write on canceled ctx = %v", err)
	}
	if err := p.Flush(shortCtx(t)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush while paused = %v", err)
	}
	if r, _ := p.Read(ctx); string(flat(r.Data)) != "abcd" {
		t.Fatalf("data lost on cancel: %q", flat(r.Data))
	}
}

func TestPipeAdvanceValidation(t *testing.T) {
	leakcheck.Check(t)
	p := newPipe(t, packet.DefaultPipeConfig())
	p.Write(context.Background(), []byte("abc"))
	for _, c := range [][2]int{{-1, 0}, {2, 1}, {0, 4}} {
		if err := p.Advance(c[0], c[1]); !errors.Is(err, packet.ErrAdvance) {
			t.Errorf("Advance(%d, %d) = %v, want ErrAdvance", c[0], c[1], err)
		}
	}
	if p.Len() != 3 {
		t.Fatal("a rejected Advance consumed data")
	}
}

func TestPipeConfigValidate(t *testing.T) {
	for _, c := range []packet.PipeConfig{{PauseThreshold: -2}, {PauseThreshold: 10, ResumeThreshold: 11}, {ResumeThreshold: -1}} {
		_, err := packet.NewPipe(c)
		if !errors.Is(err, packet.ErrConfig) {
			t.Errorf("NewPipe(%+v) = %v, want ErrConfig", c, err)
		}
	}
	for _, c := range []packet.PipeConfig{{}, {PauseThreshold: packet.NoPause}, {PauseThreshold: 100}} {
		if _, err := packet.NewPipe(c); err != nil {
			t.Errorf("NewPipe(%+v) = %v", c, err)
		}
	}
}

// The zero PipeConfig means the defaults: a writer past 1 MiB unread waits.
func TestPipeZeroConfigPausesAtDefault(t *testing.T) {
	p := newPipe(t, packet.PipeConfig{})
	if _, err := p.Write(context.Background(), make([]byte, packet.DefaultPauseThreshold-1)); err != nil || p.Paused() {
		t.Fatalf("below the threshold: err %v, paused %v", err, p.Paused())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Write(ctx, make([]byte, 1)); !errors.Is(err, context.DeadlineExceeded) || !p.Paused() {
		t.Fatalf("at the threshold: err %v, paused %v, want a wait cut by the deadline", err, p.Paused())
	}
}

// NoPause turns back-pressure off.
func TestPipeNoPauseNeverPauses(t *testing.T) {
	p := newPipe(t, packet.PipeConfig{PauseThreshold: packet.NoPause})
	if _, err := p.Write(context.Background(), make([]byte, 2*packet.DefaultPauseThreshold)); err != nil || p.Paused() {
		t.Fatalf("err %v, paused %v, want never paused", err, p.Paused())
	}
}
