package baseline_test

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/lifenet/lifenet/internal/baseline"
)

// ReadFrame takes a frame that arrives in pieces, and refuses bytes past
// the frame and a frame larger than the buffer.
func TestReadFrame(t *testing.T) {
	frame := []byte{0x01, 0x01, 3, 0, 'a', 'b', 'c'}
	buf := make([]byte, 16)
	pieces := io.MultiReader(bytes.NewReader(frame[:3]), bytes.NewReader(frame[3:]))
	if err := baseline.ReadFrame(pieces, baseline.SRMP, buf); err != nil || !bytes.Equal(buf[:len(frame)], frame) {
		t.Errorf("in pieces: %v, %q", err, buf[:len(frame)])
	}
	if err := baseline.ReadFrame(bytes.NewReader(append(frame, 0x01)), baseline.SRMP, buf); err == nil {
		t.Error("bytes past the frame: no error")
	}
	if err := baseline.ReadFrame(bytes.NewReader(frame), baseline.SRMP, buf[:5]); err == nil {
		t.Error("a frame larger than the buffer: no error")
	}
}

// Answer replies to a request with its flag and sequence and the fixed
// payload, and answers nothing else.
func TestAnswer(t *testing.T) {
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	answer := baseline.Answer("42")
	answer(w, []byte{0x01, 0x07, 1, 0, 'x'})   // a request, flag 1, seq 7
	answer(w, []byte{1<<6 | 0x01, 0x08, 0, 0}) // one-way: no answer
	answer(w, []byte{2<<6 | 0x01, 0x09, 0, 0}) // a reply: no answer
	w.Flush()
	if want := []byte{2<<6 | 0x01, 0x07, 2, 0, '4', '2'}; !bytes.Equal(out.Bytes(), want) {
		t.Errorf("answered % x, want % x", out.Bytes(), want)
	}
}
