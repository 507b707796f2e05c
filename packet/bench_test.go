package packet_test

// Benchmarks of what allocating, pooling, copying and sharing bytes cost,
// the Go counterpart of NewLife's "memory allocation and copy cost" report.
// Names are fixed so docs/perf/buffers.md can be re-run:
//
//	go test -run '^$' -bench 'BufferCost|Packet|Pipe|FrameCopyVsSlice' -benchmem -count 5 ./packet

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/lifenet/lifenet/packet"
)

var sink []byte // defeats dead-code elimination of allocations

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func BenchmarkBufferCost(b *testing.B) {
	sizes := []int{64, 512, 4 << 10, 16 << 10, 64 << 10, 128 << 10, 1 << 20, 4 << 20}
	ops := []struct {
		name  string
		bytes bool // report copy bandwidth
		run   func(b *testing.B, src, dst []byte)
	}{
		{"make", false, func(b *testing.B, src, _ []byte) {
			for b.Loop() {
				sink = make([]byte, len(src))
			}
		}},
		{"pool", false, func(b *testing.B, src, _ []byte) {
			for b.Loop() {
				packet.Get(len(src)).Release()
			}
		}},
		{"copy", true, func(b *testing.B, src, dst []byte) {
			for b.Loop() {
				copy(dst, src)
			}
		}},
		{"make+copy", true, func(b *testing.B, src, _ []byte) {
			for b.Loop() {
				d := make([]byte, len(src))
				copy(d, src)
				sink = d
			}
		}},
		{"pool+copy", true, func(b *testing.B, src, _ []byte) {
			for b.Loop() {
				p := packet.Get(len(src))
				copy(p.Bytes(), src)
				p.Release()
			}
		}},
	}
	for _, op := range ops {
		for _, n := range sizes {
			b.Run(op.name+"/"+sizeName(n), func(b *testing.B) {
				src, dst := make([]byte, n), make([]byte, n)
				if op.bytes {
					b.SetBytes(int64(n))
				}
				b.ReportAllocs()
				op.run(b, src, dst)
			})
		}
	}
}

func BenchmarkPacket(b *testing.B) {
	ops := []struct {
		name string
		run  func(b *testing.B, n int)
	}{
		{"construct+release", func(b *testing.B, n int) {
			for b.Loop() {
				packet.Get(n).Release()
			}
		}},
		{"share+release-both", func(b *testing.B, n int) {
			for b.Loop() {
				p := packet.Get(n)
				s := p.Slice(0, n/2)
				p.Release()
				s.Release()
			}
		}},
		{"chained-slice+release", func(b *testing.B, n int) {
			for b.Loop() {
				p := packet.Get(n).Chain(packet.Get(n))
				s := p.Slice(n/2, n) // spans both segments
				s.Release()
				p.Release()
			}
		}},
		{"resize", func(b *testing.B, n int) {
			p := packet.Get(n)
			defer p.Release()
			for b.Loop() {
				p.Resize(n / 2)
				p.Resize(n)
			}
		}},
		{"index-read", func(b *testing.B, n int) {
			p := packet.Get(n)
			defer p.Release()
			var x byte
			i := 0
			for b.Loop() {
				x += p.At(i & (n - 1))
				i++
			}
			sink = []byte{x}
		}},
		{"index-write", func(b *testing.B, n int) {
			p := packet.Get(n)
			defer p.Release()
			i := 0
			for b.Loop() {
				p.SetAt(i&(n-1), byte(i))
				i++
			}
		}},
	}
	for _, op := range ops {
		for _, n := range []int{64, 1024, 8192} {
			b.Run(op.name+"/"+sizeName(n), func(b *testing.B) {
				b.ReportAllocs()
				op.run(b, n)
			})
		}
	}
	for _, g := range []int{1, 4, 16, 32} {
		b.Run(fmt.Sprintf("parallel-construct+release/1K/g=%d", g), func(b *testing.B) {
			b.ReportAllocs()
			per := b.N/g + 1
			b.ResetTimer()
			var wg sync.WaitGroup
			for range g {
				wg.Go(func() {
					for range per {
						packet.Get(1024).Release()
					}
				})
			}
			wg.Wait()
		})
	}
}

func BenchmarkPipe(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{64, 4 << 10, 64 << 10} {
		b.Run("append-read-advance/"+sizeName(n), func(b *testing.B) {
			p, _ := packet.NewPipe(packet.DefaultPipeConfig())
			defer p.CloseRead()
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				p.Append(ctx, packet.Get(n))
				r, _ := p.Read(ctx)
				l := r.Data.Len()
				p.Advance(l, l)
			}
		})
		b.Run("write-read-advance/"+sizeName(n), func(b *testing.B) {
			p, _ := packet.NewPipe(packet.DefaultPipeConfig())
			defer p.CloseRead()
			src := make([]byte, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				p.Write(ctx, src)
				r, _ := p.Read(ctx)
				l := r.Data.Len()
				p.Advance(l, l)
			}
		})
	}
	b.Run("flush-not-paused", func(b *testing.B) {
		p, _ := packet.NewPipe(packet.DefaultPipeConfig())
		defer p.CloseRead()
		b.ReportAllocs()
		for b.Loop() {
			p.Flush(ctx)
		}
	})
}

// BenchmarkFrameCopyVsSlice measures the two ways a codec can hand a frame
// out of a 64 KiB receive buffer: copy it into a fitted pooled buffer, or
// share a slice of the receive buffer. Where they cross is the codec's
// copy threshold (docs/perf/buffers.md).
func BenchmarkFrameCopyVsSlice(b *testing.B) {
	rx := packet.Get(64 << 10)
	defer rx.Release()
	for _, n := range []int{64, 256, 512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 64<<10 - 16} {
		b.Run("copy/"+sizeName(n), func(b *testing.B) {
			b.ReportAllocs()
			src := rx.Bytes()[16 : 16+n]
			for b.Loop() {
				f := packet.Get(n)
				copy(f.Bytes(), src)
				f.Release()
			}
		})
		b.Run("slice/"+sizeName(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rx.Slice(16, n).Release()
			}
		})
	}
}
