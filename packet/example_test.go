package packet_test

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/lifenet/lifenet/packet"
)

// A receive buffer is shared with a frame that outlives the read; each
// handle is released on its own and the storage returns to the pool after
// the last one.
func ExamplePacket_Slice() {
	rx := packet.Get(1024)
	n := copy(rx.Bytes(), "hello, world")
	frame := rx.Slice(7, n-7) // no copy: shares rx's storage
	fmt.Println(string(frame.Bytes()), frame.RefCount())
	rx.Release()
	fmt.Println(string(frame.Bytes()), frame.RefCount())
	frame.Release()
	// Output:
	// world 2
	// world 1
}

// Prepending a frame header without copying the payload: reserve headroom
// when the payload buffer is taken.
func ExamplePacket_ExpandHeader() {
	payload := packet.GetWithHeadroom(4, 5)
	copy(payload.Bytes(), "hello")
	msg := payload.ExpandHeader(4)
	binary.LittleEndian.PutUint32(msg.Bytes(), 5)
	fmt.Println(msg.Hex(0), msg.NumSegments())
	msg.Release()
	// Output: 05 00 00 00 68 65 6c 6c 6f 1
}

// A writer goroutine feeds bytes; the reader cuts length-prefixed frames.
func ExamplePipe() {
	ctx := context.Background()
	p, _ := packet.NewPipe(packet.DefaultPipeConfig())
	go func() {
		for _, s := range []string{"\x03ab", "c\x02", "hi"} { // frames split across writes
			p.Write(ctx, []byte(s))
		}
		p.CloseWrite(nil)
	}()
	for {
		r, err := p.Read(ctx)
		if err != nil {
			break // io.EOF: writer done
		}
		var head [1]byte
		r.Data.CopyTo(head[:])
		if n := int(head[0]); r.Data.Len() > n {
			p.Advance(1, 1)
			f, _ := p.TakeFrame(n)
			fmt.Println(string(f.AppendTo(nil)))
			f.Release()
			continue
		}
		p.Advance(0, r.Data.Len()) // incomplete: wait for more
	}
	p.CloseRead()
	// Output:
	// abc
	// hi
}
