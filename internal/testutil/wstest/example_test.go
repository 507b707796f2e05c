package wstest_test

import (
	"fmt"

	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
)

// Example_twoFrames parses a receive buffer holding a masked text frame, an
// unmasked binary frame and the first bytes of a third frame.
func Example_twoFrames() {
	mask := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	buf := ws.AppendFrame(nil, ws.Text, []byte("Hello"), &mask)
	buf = ws.AppendFrame(buf, ws.Binary, []byte{1, 2, 3}, nil)
	buf = append(buf, 0x82, 0x7e, 0x01) // incomplete

	for {
		f, n, err := ws.Parse(buf, 1<<20)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if n == 0 {
			fmt.Printf("need more bytes; keeping %d\n", len(buf))
			return
		}
		fmt.Printf("%v fin=%v masked=%v payload=%q\n", f.Op, f.Fin, f.Masked, f.Payload)
		buf = buf[n:]
	}
	// Output:
	// Text fin=true masked=true payload="Hello"
	// Binary fin=true masked=false payload="\x01\x02\x03"
	// need more bytes; keeping 3
}
