package rpc

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/lifenet/lifenet/internal/baseline"
)

// FloorCall makes one serial call of action with no arguments the way the
// least client of this wire would, with rpc's own encoding and decoding:
// the request framed in req's room and written, the next frame read into
// buf, its sequence and echoed name checked, its data decoded into result.
// No multiplexing, no timeout, no safety for concurrent callers: it is the
// floor of BenchmarkClientNoArg's impl=floor row (client_bench_linux_test.go),
// which measures what the client's own work costs beside a bare caller's.
func FloorCall(c io.ReadWriter, action string, seq uint8, req, buf []byte, result any) error {
	frame, _, err := appendRequest(append(req[:0], FlagRPC, seq, 0, 0), action, nil, "", nil, nil)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint16(frame[2:], uint16(len(frame)-4))
	if _, err := c.Write(frame); err != nil {
		return err
	}
	if err := baseline.ReadFrame(c, baseline.SRMP, buf); err != nil {
		return err
	}
	if buf[0] != baseline.KindReply<<6|FlagRPC || buf[1] != seq {
		return fmt.Errorf("rpc: floor: frame %#x seq %d answers no request of seq %d", buf[0], buf[1], seq)
	}
	b, err := parseBody(buf[4:4+int(binary.LittleEndian.Uint16(buf[2:]))], false)
	if err != nil {
		return err
	}
	if string(b.action) != action {
		return fmt.Errorf("rpc: floor: a reply of %q to %q", b.action, action)
	}
	return decodeResult(b.data, result)
}
