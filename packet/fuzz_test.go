package packet_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// ops reads small numbers from fuzz input, yielding zeros once it runs out.
type ops struct{ b []byte }

func (o *ops) more() bool { return len(o.b) > 0 }

func (o *ops) next() int {
	if len(o.b) == 0 {
		return 0
	}
	v := int(o.b[0])
	o.b = o.b[1:]
	return v
}

func (o *ops) upTo(n int) int {
	if n <= 0 {
		return 0
	}
	return (o.next()<<8 | o.next()) % (n + 1)
}

// maxModel bounds the bytes a fuzz run keeps buffered, so that the
// whole-buffer comparisons stay cheap.
const maxModel = 16 << 10

// maxOps bounds the operations one fuzz input may drive; longer inputs add
// run time, not coverage.
const maxOps = 1024

func newOps(in []byte) *ops { return &ops{in[:min(len(in), maxOps)]} }

// FuzzPipe drives a pipe with random writes, appends, reads, advances and
// frame takes, against a plain []byte model of the unconsumed data.
func FuzzPipe(f *testing.F) {
	f.Add([]byte{0, 10, 2, 0, 5, 0, 5})
	f.Add([]byte{1, 200, 1, 1, 3, 0, 50, 2, 0, 1, 0, 2, 4, 0, 0})
	f.Add([]byte{0, 255, 0, 255, 0, 255, 3, 1, 0, 2, 0, 0, 0, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		start := leakcheck.Mark()
		ctx := context.Background()
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		p, _ := packet.NewPipe(packet.PipeConfig{PauseThreshold: packet.NoPause}) // nothing blocks
		var model []byte
		examined := 0
		seq := byte(0)
		gen := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				seq++
				b[i] = seq
			}
			return b
		}
		o := newOps(in)
		for o.more() {
			op := o.next() % 5
			if op < 2 && len(model) > maxModel {
				op = 3 // keep each run linear: drain instead of growing
			}
			switch op {
			case 0:
				b := gen(o.next() * 17)
				p.Write(ctx, b)
				model = append(model, b...)
			case 1:
				b := gen(o.next() * 5)
				pkt := packet.Get(len(b) / 2)
				copy(pkt.Bytes(), b)
				pkt.Chain(packet.Wrap(b[len(b)/2:]))
				p.Append(ctx, pkt)
				model = append(model, b...)
			case 2:
				r, err := p.Read(canceled)
				if len(model) > examined {
					if err != nil || !bytes.Equal(flat(r.Data), model) {
						t.Fatalf("Read = %d bytes, %v; model has %d", r.Data.Len(), err, len(model))
					}
				} else if err == nil {
					t.Fatalf("Read returned with nothing unexamined (%d/%d)", examined, len(model))
				}
				e := o.upTo(len(model))
				c := o.upTo(e)
				if err := p.Advance(c, e); err != nil {
					t.Fatal(err)
				}
				model, examined = model[c:], e-c
			case 3:
				n := o.upTo(len(model))
				fr, err := p.TakeFrame(n)
				if err != nil || !bytes.Equal(fr.AppendTo(nil), model[:n]) {
					t.Fatalf("TakeFrame(%d) = %v", n, err)
				}
				fr.Release()
				model, examined = model[n:], max(examined-n, 0)
			case 4:
				if err := p.Advance(0, len(model)+1); err == nil {
					t.Fatal("Advance past the end accepted")
				}
			}
			if p.Len() != len(model) {
				t.Fatalf("Len = %d, model %d", p.Len(), len(model))
			}
		}
		p.CloseRead()
		if report := leakcheck.Buffers(start, 0); report != "" {
			t.Fatal(report)
		}
	})
}

// FuzzSliceRelease drives slice, share, write, chain and release sequences
// over handles of shared storage and checks that every storage owner returns
// to its pool exactly once, after its last handle.
func FuzzSliceRelease(f *testing.F) {
	f.Add(100, []byte{0, 1, 2, 3, 1, 0, 2})
	f.Add(5000, []byte{2, 0, 0, 5, 0, 4, 0, 3, 1, 1, 0, 1, 1})
	f.Add(1, []byte{3, 0, 3, 0, 3, 0, 0, 0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, size int, in []byte) {
		size = max(size%70000, 0)
		start := leakcheck.Mark()
		rc, done := packet.CountRecycles()
		defer done()

		// Storage is reused from the pools, so one owner may serve several
		// incarnations: want[k] is how many recycles k must have seen once
		// every handle of its current incarnation is released.
		want := map[any]int{}
		note := func(p *packet.Packet) {
			for s := p; s != nil; s = s.Next() {
				if k := packet.OwnerOf(s); k != nil && rc.Of(k) == want[k] {
					want[k]++ // a new incarnation
				}
			}
		}
		first := packet.Get(size)
		fill(first, 0)
		note(first)
		live := []*packet.Packet{first}
		o := newOps(in)
		for o.more() && len(live) > 0 {
			i := o.next() % len(live)
			h := live[i]
			op := o.next() % 5
			if (op == 0 || op == 2) && len(live) >= 64 || op == 3 && h.Total() > maxModel {
				op = 1 // bound the work per run
			}
			switch op {
			case 0:
				off := o.upTo(h.Total())
				n := o.upTo(h.Total() - off)
				s := h.Slice(off, n)
				if !bytes.Equal(s.AppendTo(nil), h.AppendTo(nil)[off:off+n]) {
					t.Fatal("slice bytes differ from source")
				}
				live = append(live, s)
			case 1:
				h.Release()
				live = append(live[:i], live[i+1:]...)
			case 2:
				live = append(live, h.Share())
			case 3:
				h.Write([]byte{byte(o.next())})
				note(h)
			case 4:
				j := o.next() % len(live)
				if j != i {
					h.Chain(live[j])
					live = append(live[:j], live[j+1:]...)
				}
			}
			for _, l := range live {
				for s := l; s != nil; s = s.Next() {
					if k := packet.OwnerOf(s); k != nil && (s.RefCount() < 1 || rc.Of(k) >= want[k]) {
						t.Fatalf("live handle on recycled storage (refs %d)", s.RefCount())
					}
				}
			}
		}
		for _, l := range live {
			l.Release()
		}
		for k, w := range want {
			if n := rc.Of(k); n != w {
				t.Fatalf("storage recycled %d times, want exactly %d", n, w)
			}
		}
		if report := leakcheck.Buffers(start, 0); report != "" {
			t.Fatal(report)
		}
	})
}
