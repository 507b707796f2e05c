package codec

import (
	"bytes"
	"fmt"

	"github.com/lifenet/lifenet/packet"
)

// delimiterScan is how many more bytes the framer gathers before looking
// for the delimiter again in an incomplete frame.
const delimiterScan = 256

// Delimiter is the delimiter-terminated format (NewLife SplitDataCodec):
// a frame ends with, and includes, Delim (default CR LF).
type Delimiter struct {
	Delim []byte
}

func (c Delimiter) delim() []byte {
	if len(c.Delim) == 0 {
		return defaultDelimiter
	}
	return c.Delim
}

// FrameLen implements Splitter.
func (c Delimiter) FrameLen(b []byte, maxFrame int) (int, error) {
	d := c.delim()
	if i := bytes.Index(b, d); i >= 0 {
		if i+len(d) > maxFrame {
			return 0, fmt.Errorf("%w: line of %d bytes, limit %d", ErrFrameTooLarge, i+len(d), maxFrame)
		}
		return i + len(d), nil
	}
	if len(b) >= maxFrame {
		return 0, fmt.Errorf("%w: no delimiter in %d bytes, limit %d", ErrFrameTooLarge, len(b), maxFrame)
	}
	return -min(len(b)+delimiterScan, maxFrame), nil // never ask for more than a line may hold
}

// Encode appends the delimiter to payload and returns it (ownership moves).
func (c Delimiter) Encode(payload *packet.Packet) *packet.Packet {
	payload.Write(c.delim())
	return payload
}
