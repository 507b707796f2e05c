package fleet

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// The request frame matches PROTOCOL.md's layout: S1's header shape and
// R-vectors' body (name, then a data block only with data).
func TestSRMPCall(t *testing.T) {
	t.Parallel()
	got := hex.EncodeToString(srmpCall("Bench/NoArg", nil))
	if want := "01000c000b42656e63682f4e6f417267"; got != want {
		t.Errorf("NoArg frame %s, want %s", got, want)
	}
	f := srmpCall("A", []byte("xy"))
	if want := []byte{1, 0, 8, 0, 1, 'A', 2, 0, 0, 0, 'x', 'y'}; !bytes.Equal(f, want) {
		t.Errorf("frame with data % x, want % x", f, want)
	}
	long := srmpCall("A", make([]byte, 70_000))
	if !bytes.Equal(long[:8], []byte{1, 0, 0xFF, 0xFF, 0x76, 0x11, 0x01, 0}) { // 2+4+70000 = 70006
		t.Errorf("long header % x", long[:8])
	}
}

// Replies cut anywhere parse to the same frames; a whole payload is
// handed over, a cut one is not.
func TestFeedSRMP(t *testing.T) {
	t.Parallel()
	reply := []byte{0x81, 7, 2, 0, 'O', 'K'}
	errReply := []byte{0xC1, 8, 11, 0, 1, 'A', 0x94, 1, 0, 0, 1, 0, 0, 0, 'x'}
	longReply := append([]byte{0x81, 9, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0}, make([]byte, 65535)...)
	stream := append(append(append([]byte{}, reply...), errReply...), longReply...)
	for cut := 1; cut <= 20; cut++ {
		var c conn
		var seqs []byte
		var whole int
		for p := stream; len(p) > 0; {
			n := min(cut, len(p))
			if err := c.feedSRMP(p[:n], func(kind, seq byte, payload []byte) {
				seqs = append(seqs, seq)
				if payload != nil {
					whole++
				}
			}); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if !bytes.Equal(seqs, []byte{7, 8, 9}) {
			t.Errorf("cut %d: %d sequences (%v…), want 7 8 9", cut, len(seqs), seqs[:min(len(seqs), 5)])
		}
		if cut >= len(stream) && whole != 3 {
			t.Errorf("whole: %d payloads handed over, want 3", whole)
		}
	}
	var c conn
	if err := c.feedSRMP([]byte{0x81, 1, 0xFF, 0xFF, 0, 0, 0, 0x80}, func(byte, byte, []byte) {}); err != errProtocol {
		t.Errorf("a negative length: %v, want errProtocol", err)
	}
	if got := errorText(errReply[4:]); got != "A: error 404: x" {
		t.Errorf("errorText %q", got)
	}
}

func TestHistogram(t *testing.T) {
	t.Parallel()
	var h histogram
	for v := uint64(1); v <= 1000; v++ {
		h.add(v)
	}
	for q, want := range map[float64]float64{0.5: 500, 0.99: 990} {
		if got := h.quantile(q, nil); got < want*0.93 || got > want*1.07 {
			t.Errorf("q%v = %v, want about %v", q, got, want)
		}
	}
	if h.max.Load() != 1000 {
		t.Errorf("max %d", h.max.Load())
	}
	for v := uint64(0); v < 1<<40; v = v*3 + 1 {
		if b := bucket(v); lowest(b) > v || lowest(b+1) <= v {
			t.Errorf("%d in bucket %d [%d, %d)", v, b, lowest(b), lowest(b+1))
		}
	}
}
