package wstest_test

import (
	"bytes"
	"testing"

	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
)

const fuzzMax = 1 << 16

func FuzzParse(f *testing.F) {
	for _, v := range rfcVectors() {
		f.Add(v.wire)
	}
	mask := [4]byte{1, 2, 3, 4}
	for _, seed := range [][]byte{
		{}, {0x81},
		{0xc1, 0x00}, {0x83, 0x00}, {0x09, 0x00}, {0x89, 0x7e, 0x00, 0x7e},
		{0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0},
		{0x82, 0x7e, 0x00, 0x03, 'a', 'b', 'c'},
		ws.AppendClose(nil, ws.CloseNormal, "bye", &mask),
		ws.AppendFrame(ws.AppendFrame(nil, ws.Text, []byte("one"), &mask), ws.Binary, []byte("two"), nil),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := bytes.Clone(data)
		fr, n, err := ws.Parse(b, fuzzMax)
		if n < 0 || n > len(b) {
			t.Fatalf("n %d out of range 0…%d", n, len(b))
		}
		if err != nil && n != 0 {
			t.Fatalf("error %v with n %d", err, n)
		}
		h, hn, herr := ws.ParseHeader(data)
		if n > 0 && (herr != nil || hn == 0 || h != fr.Header || int64(n) != int64(hn)+h.Length) {
			t.Fatalf("ParseHeader %+v n %d err %v disagrees with Parse %+v n %d", h, hn, herr, fr.Header, n)
		}
		// Every prefix shorter than the frame (or than data, if no frame was
		// parsed) needs more bytes, or fails the same way.
		end := len(data)
		if n > 0 {
			end = n
		}
		if end <= 512 {
			for i := range end {
				p := bytes.Clone(data[:i])
				_, pn, perr := ws.Parse(p, fuzzMax)
				if pn != 0 || (perr != nil && perr != err) {
					t.Fatalf("prefix %d: n %d err %v; whole: n %d err %v", i, pn, perr, n, err)
				}
			}
		}
		if n == 0 {
			return
		}
		want := bytes.Clone(data[hn:n])
		if fr.Masked {
			ws.Unmask(want, fr.Mask, 0)
		}
		if !bytes.Equal(fr.Payload, want) {
			t.Fatal("payload is not the unmasked input")
		}
		// Re-encode unmasked, as a final frame, and parse again.
		enc := ws.AppendFrame(nil, fr.Op, fr.Payload, nil)
		g, gn, gerr := ws.Parse(enc, fuzzMax)
		if gerr != nil || gn != len(enc) || g.Op != fr.Op || !g.Fin || g.Masked || !bytes.Equal(g.Payload, fr.Payload) {
			t.Fatalf("AppendFrame round trip: %+v n %d err %v; from %+v", g.Header, gn, gerr, fr.Header)
		}
		// Re-encode with the same FIN bit, masked with the same key.
		enc = append(ws.AppendHeader(nil, fr.Op, fr.Fin, len(fr.Payload), &fr.Mask), fr.Payload...)
		ws.Unmask(enc[len(enc)-len(fr.Payload):], fr.Mask, 0)
		wantH := fr.Header
		wantH.Masked = true
		g, gn, gerr = ws.Parse(enc, fuzzMax)
		if gerr != nil || gn != len(enc) || g.Header != wantH || !bytes.Equal(g.Payload, fr.Payload) {
			t.Fatalf("AppendHeader round trip: %+v n %d err %v; from %+v", g.Header, gn, gerr, fr.Header)
		}
	})
}
