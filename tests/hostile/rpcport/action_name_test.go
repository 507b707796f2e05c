package rpcport_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
)

// nameRow is a request body with a hand-made action name and what the
// port must do with it: answer 404 (400 for a name past maxCallName)
// repeating at most maxReplyName bytes of the name, or drop it
// unanswered, counted, as NewLife drops a name it cannot serve. Either way
// the connection stays.
type nameRow struct {
	name string
	body []byte
	drop bool
}

// nameBody is a request body for action name, with no data block.
func nameBody(name []byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(name))), name...)
}

// The port's bounds on names (issue 26 F5): a name longer than
// maxCallName is a 400 without a lookup, and a reply repeats at most
// maxReplyName bytes of a name (NewLife's longest), so that no reply grows
// with a hostile name: replyBound bounds every reply to one.
const (
	maxCallName  = 1024
	maxReplyName = rpc.MaxActionLen
	replyBound   = 512
)

// longestName is the longest action name a request frame holds: the
// frame's 8-byte header and the name's 4-byte varint aside.
const longestName = codec.DefaultMaxFrame - 8 - 4

// nameRows are names at every varint length boundary (1 to 4 bytes of
// length), at the port's own bounds, the longest a frame holds, and
// malformed ones.
func nameRows() []nameRow {
	var rows []nameRow
	lengths := []int{1, 127, 128, maxCallName, maxCallName + 1, 16383, 16384, 2097151, 2097152}
	if !raceEnabled {
		lengths = append(lengths, 5<<20, longestName)
	}
	for _, n := range lengths {
		rows = append(rows, nameRow{name: fmt.Sprintf("%d-byte name", n), body: nameBody(bytes.Repeat([]byte("n"), n))})
	}
	return append(rows,
		nameRow{"empty name", nameBody(nil), true},
		nameRow{"empty name with data", rawBody(nil, []byte("1")), true},
		nameRow{"name with byte 0x80", nameBody([]byte("Bench/\x80")), true},
		nameRow{"name with byte 0xFF", nameBody([]byte("\xffBench/NoArg")), true},
		nameRow{"name with DEL", nameBody([]byte("Bench/\x7f")), true},
		nameRow{"UTF-8 name", nameBody([]byte("服务/名字")), true},
		nameRow{"truncated varint", []byte{0x80}, true},
		nameRow{"varint of 10 bytes, overflowing", bytes.Repeat([]byte{0xFF}, 10), true},
		nameRow{"varint past the payload", []byte{0x05, 'a', 'b'}, true},
		nameRow{"varint of 2^31 past the payload", append(binary.AppendUvarint(nil, 1<<31), "Bench/NoArg"...), true},
		nameRow{"name, then 3 stray bytes", append(nameBody([]byte("Bench/NoArg")), 1, 2, 3), true},
		nameRow{"name, then a data length past the payload", append(nameBody([]byte("Bench/NoArg")), 0xFF, 0xFF, 0, 0), true},
		nameRow{"name, then a negative data length", append(nameBody([]byte("Bench/NoArg")), 0xFF, 0xFF, 0xFF, 0xFF), true},
		nameRow{"control bytes in the name", nameBody([]byte("\x01\x02/\x03")), false},
	)
}

// nameSent says how requests go on a connection, each in a frame (and
// over WebSocket each frame in a message of its own) with sequence numbers
// 3, 4, …, all in one write, and how the next reply comes back.
type nameSent func(rc *raw, bodies ...[]byte) (frame, error)

// probeSeq numbers the call of Bench/NoArg that follows a row the port
// must drop: the port answers a connection's requests to inline actions
// and unknown ones in order, so were the row answered, its reply would
// come before the probe's.
const probeSeq = 4

// Action names at every length a varint can say within a frame, up to the
// longest a frame holds, and malformed ones, over SRMP and SRMP in
// WebSocket, on several connections at once: each gets its 404 (a 400 past
// 1,024 bytes) naming it, cut to 127 bytes, in a reply of at most 512
// bytes; each malformed one is dropped unanswered and counted in
// Stats().Dropped; every connection is served afterwards. Over HTTP a path
// of any length up to the header limit gets its 404 or 400, as short, and
// one past the limit a 431.
func TestActionNames(t *testing.T) {
	conns := size(4, 1, 16)
	rows := nameRows()
	r := attack(t, rpc.Config{}, nil)
	srmp := func(rc *raw, bodies ...[]byte) (frame, error) {
		var b []byte
		for i, body := range bodies {
			b = append(b, srmpFrame(b0Request, byte(3+i), body)...)
		}
		if err := rc.write(b); err != nil {
			return frame{}, err
		}
		return rc.readFrame()
	}
	ws := func(rc *raw, bodies ...[]byte) (frame, error) {
		var b []byte
		for i, body := range bodies {
			b = append(b, wsMsg(srmpFrame(b0Request, byte(3+i), body))...)
		}
		if err := rc.write(b); err != nil {
			return frame{}, err
		}
		f, err := rc.readWS()
		if err != nil {
			return frame{}, err
		}
		return readSRMP(bytes.NewReader(f.payload))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	drops := 0
	worst := time.Duration(0)
	for _, proto := range []struct {
		name string
		send nameSent
	}{{"SRMP", srmp}, {"WebSocket", ws}} {
		for range conns {
			rc := r.dial()
			wg.Go(func() {
				if proto.name == "WebSocket" {
					if err := rc.wsOpen(); err != nil {
						t.Error(err)
						return
					}
				}
				for _, row := range rows {
					start := time.Now()
					bodies := [][]byte{row.body}
					if row.drop {
						bodies = append(bodies, request(t, "Bench/NoArg", nil))
					}
					f, err := proto.send(rc, bodies...)
					if err := checkNameReply(row, f, err); err != nil {
						t.Errorf("%s, %s: %v", proto.name, row.name, err)
						return
					}
					mu.Lock()
					if row.drop {
						drops++
					} else {
						worst = max(worst, time.Since(start))
					}
					mu.Unlock()
				}
				var err error
				if proto.name == "SRMP" {
					err = rc.serves(t)
				} else {
					var rep reply
					rep, err = rc.wsCall(77, request(t, "Bench/NoArg", nil))
					if err == nil && string(rep.data) != "42" {
						err = fmt.Errorf("Bench/NoArg answered %+v", rep)
					}
				}
				if err != nil {
					t.Errorf("%s after the names: %v", proto.name, err)
				}
			})
		}
	}
	wg.Wait()
	if got := r.srv.Stats().Dropped; got != uint64(drops) {
		t.Errorf("Stats().Dropped = %d, want %d (one per malformed name)", got, drops)
	}

	// HTTP: the action is the path.
	hc := r.dial()
	for _, n := range []int{1, 127, 128, maxCallName, maxCallName + 1, 16383, 16384, 60 << 10} {
		name := strings.Repeat("h", n)
		if err := hc.write([]byte(httpReq("GET", "/"+name, nil, ""))); err != nil {
			t.Fatal(err)
		}
		resp, body, err := hc.readHTTP()
		code := `"code":404`
		if n > maxCallName {
			code = `"code":400`
		}
		if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(body, `{"action":"`+name[:min(n, maxReplyName)]) || !strings.Contains(body, code) || len(body) > replyBound {
			t.Errorf("HTTP path of %d bytes: %v %.60q (%d bytes), %v; want a %s of at most %d bytes naming it", n, resp, body, len(body), err, code, replyBound)
		}
	}
	for _, path := range []string{"/", "/%E6%9C%8D/%E5%8A%A1", "/Bench/%80", "/Bench/%7F"} {
		if err := hc.write([]byte(httpReq("GET", path, nil, ""))); err != nil {
			t.Fatal(err)
		}
		resp, body, err := hc.readHTTP()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(body, `"code":404`) {
			t.Errorf("HTTP path %s: %v %.80q, %v; want a 404", path, resp, body, err)
		}
	}
	if err := hc.httpServes(); err != nil {
		t.Error(err)
	}
	long := r.dial()
	long.write([]byte(httpReq("GET", "/"+strings.Repeat("h", 64<<10), nil, "")))
	if resp, err := long.readRefusal(); err != nil || resp.StatusCode != 431 {
		t.Errorf("HTTP path past the header limit: %v, %v; want 431", resp, err)
	}

	bounds := 0
	for _, row := range rows {
		if !row.drop && row.name != "control bytes in the name" {
			bounds++
		}
	}
	f := r.end("action names", "%d rows (%d lengths up to %d bytes, %d malformed) on %d SRMP + %d WebSocket connections: slowest answer %s, %d dropped and counted; replies of at most %d bytes; HTTP paths up to 60 KiB 404 or 400, past 64 KiB 431",
		len(rows), bounds, len(nameOf(rows[bounds-1].body)), len(rows)-bounds, conns, conns, ms(worst), drops, replyBound)
	// A connection holds one request at a time, its frame and the copy
	// its writer made; garbage may reach the live heap's size again before
	// it is collected.
	r.heapBound(f, uint64(2*conns)*4*codec.DefaultMaxFrame)
}

// checkNameReply checks the first reply that came back after row: for a
// row to be dropped, the probe's; else the row's 404 or 413 naming it,
// within the frame limit.
func checkNameReply(row nameRow, f frame, err error) error {
	if err != nil {
		return err
	}
	if row.drop {
		if f.seq != probeSeq {
			return fmt.Errorf("answered %02X %.60q; want it dropped unanswered", f.b0, f.payload)
		}
		if rep, err := parseReply(f); err != nil || rep.err || string(rep.data) != "42" {
			return fmt.Errorf("the probe after it: %+v, %v", rep, err)
		}
		return nil
	}
	if f.seq != 3 {
		return fmt.Errorf("a reply to sequence number %d", f.seq)
	}
	if n := len(f.payload) + 4; n > replyBound {
		return fmt.Errorf("a reply frame of %d bytes, past %d: it grows with the name", n, replyBound)
	}
	rep, err := parseReply(f)
	name := nameOf(row.body)
	want := int32(rpc.CodeNotFound)
	if len(name) > maxCallName {
		want = rpc.CodeBadRequest
	}
	switch {
	case err != nil:
		return err
	case !rep.err || rep.code != want:
		return fmt.Errorf("answered %v %d %.80q; want a %d", rep.err, rep.code, rep.data, want)
	case !bytes.Equal(rep.action, name[:min(len(name), maxReplyName)]):
		return fmt.Errorf("the reply names a %d-byte action, not the request's first %d bytes", len(rep.action), maxReplyName)
	}
	return nil
}

// nameOf is the action name at the start of a request body.
func nameOf(body []byte) []byte {
	n, k := binary.Uvarint(body)
	return body[k : k+int(n)]
}
