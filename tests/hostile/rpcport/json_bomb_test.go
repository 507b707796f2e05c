package rpcport_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc"
)

// jsonBomb is an argument built to cost a JSON decoder: depth, width or
// length, at the size of one frame.
type jsonBomb struct {
	name string
	data []byte
}

// jsonBombs are the shapes: deep and wide ones of n bytes or just under,
// strings of room bytes (the largest argument a frame holds, but under the
// race detector).
func jsonBombs(n, room int) []jsonBomb {
	var obj bytes.Buffer
	obj.WriteByte('{')
	for i := 0; obj.Len() < n-24; i++ {
		if i > 0 {
			obj.WriteByte(',')
		}
		obj.WriteString(`"k` + strconv.Itoa(i) + `":0`)
	}
	obj.WriteByte('}')
	return []jsonBomb{
		{"deep array", []byte(strings.Repeat("[", n/2) + strings.Repeat("]", n/2))},
		{"deep, never closed", []byte(strings.Repeat("[", n))},
		{"deep object", []byte(strings.Repeat(`{"a":`, n/6-1) + "0" + strings.Repeat("}", n/6-1))},
		{"wide array", []byte("[" + strings.Repeat("0,", n/2-1) + "0]")},
		{"wide object", obj.Bytes()},
		{"huge string", []byte(`"` + strings.Repeat("a", room-2) + `"`)},
		{"huge escaped string", []byte(`"` + strings.Repeat(`\u0041`, (room-2)/6) + `"`)},
	}
}

// bombTarget is where a bomb goes: an action over a protocol.
type bombTarget struct {
	name   string
	send   func(rc *raw, data []byte) (code int, reply int, err error)
	serves func(rc *raw) error // the connection's next call is served
}

// bombRoom is the largest argument that fits a request frame of MaxFrame
// for the actions below (header, name and data length aside).
const bombRoom = codec.DefaultMaxFrame - 8 - 1 - len("Bench/EchoString") - 4

func bombTargets(t *testing.T) []bombTarget {
	srmp := func(action string) func(*raw, []byte) (int, int, error) {
		return func(rc *raw, data []byte) (int, int, error) {
			if err := rc.write(srmpFrame(b0Request, 1, rawBody([]byte(action), data))); err != nil {
				return 0, 0, err
			}
			f, err := rc.readFrame()
			if err != nil {
				return 0, 0, err
			}
			r, err := parseReply(f)
			if string(r.action) != action {
				err = fmt.Errorf("a reply for %q", r.action)
			}
			return int(r.code), len(f.payload) + 8, err
		}
	}
	httpJSON := func(rc *raw, data []byte) (int, int, error) {
		head := httpReq("POST", "/Bench/Add", []string{"Content-Type: application/json", "Content-Length: " + strconv.Itoa(len(data))}, "")
		if err := rc.write(append([]byte(head), data...)); err != nil {
			return 0, 0, err
		}
		resp, body, err := rc.readHTTP()
		if err != nil {
			return 0, 0, err
		}
		if resp.StatusCode != 200 {
			return resp.StatusCode, len(body), nil
		}
		var env struct{ Code int }
		if _, err := fmt.Sscanf(strings.TrimPrefix(body, `{"action":"Bench/Add","code":`), "%d", &env.Code); err != nil {
			return 0, 0, fmt.Errorf("answer %.80q", body)
		}
		return env.Code, len(body), nil
	}
	srmpServes := func(rc *raw) error { return rc.serves(t) }
	return []bombTarget{
		{"SRMP Bench/Add (a struct)", srmp("Bench/Add"), srmpServes},
		{"SRMP Bench/EchoString (a string)", srmp("Bench/EchoString"), srmpServes},
		{"HTTP POST /Bench/Add", httpJSON, (*raw).httpServes},
	}
}

// JSON bombs up to the frame limit, over SRMP into a struct and a string
// parameter and over HTTP into a struct: every one is answered (0 or 400,
// never a 500 or a lost connection), every reply fits the frame limit, the
// connection is served after it, and the heap grows by a bounded multiple
// of the bytes in flight. One byte over the limit is refused before its
// body is read.
func TestJSONBombs(t *testing.T) {
	n := size(2<<20, 512<<10, bombRoom)
	room := size(bombRoom, 1<<20, bombRoom)
	conns, rounds := size(1, 1, 4), size(1, 1, 3)
	bombs := jsonBombs(n, room)
	targets := bombTargets(t)
	r := attack(t, rpc.Config{}, nil)

	var mu sync.Mutex
	worst := map[string]time.Duration{}
	codes := map[string]string{}
	var wg sync.WaitGroup
	for _, tg := range targets {
		for range conns {
			rc := r.dial()
			wg.Go(func() {
				for round := range rounds {
					for _, b := range bombs {
						start := time.Now()
						code, size, err := tg.send(rc, b.data)
						d := time.Since(start)
						key := tg.name + ", " + b.name
						switch {
						case err != nil:
							t.Errorf("%s (round %d): %v", key, round, err)
							return
						case code != rpc.CodeOK && code != rpc.CodeBadRequest:
							t.Errorf("%s: code %d, want 0 or 400", key, code)
						case size > codec.DefaultMaxFrame:
							t.Errorf("%s: a reply of %d bytes, past the frame limit", key, size)
						}
						mu.Lock()
						worst[key] = max(worst[key], d)
						codes[key] = strconv.Itoa(code)
						mu.Unlock()
					}
				}
				if err := tg.serves(rc); err != nil {
					t.Errorf("%s: %v", tg.name, err)
				}
			})
		}
	}
	wg.Wait()

	// One byte over the limit: refused from its header, before its body.
	over := r.dial()
	start := time.Now()
	over.write(srmpHeader(b0Request, 1, codec.DefaultMaxFrame-8+1))
	if _, err := over.waitEnd(patience); err != nil {
		t.Errorf("a frame one byte over the limit: %v", err)
	}
	refused := time.Since(start)
	hover := r.dial()
	start = time.Now()
	hover.write([]byte(httpReq("POST", "/Bench/Add", []string{"Content-Type: application/json", "Content-Length: " + strconv.Itoa(codec.DefaultMaxFrame+1)}, "[")))
	if resp, _, err := hover.readHTTP(); err != nil || resp.StatusCode != 413 {
		t.Errorf("an HTTP body one byte over the limit: %v, %v; want 413", resp, err)
	}
	hrefused := time.Since(start)

	if p := r.srv.Stats().Panics; p != 0 {
		t.Errorf("%d handler panics", p)
	}
	var b strings.Builder
	for _, tg := range targets {
		for _, bm := range bombs {
			key := tg.name + ", " + bm.name
			fmt.Fprintf(&b, "%s: code %s, slowest %s; ", key, codes[key], ms(worst[key]))
		}
	}
	f := r.end("JSON bombs", "%d conns per target × %d rounds × %d shapes (deep and wide %d B, strings %d B); %s over the limit refused in %s (SRMP), 413 in %s (HTTP)",
		conns, rounds, len(bombs), n, room, b.String(), ms(refused), ms(hrefused))
	// Every connection holds one bomb at a time, whose decoding costs up
	// to about 12 bytes of heap per byte received (a wide object's binder
	// builds a map of every key: issue 26 F5; 1.3 GB for 12 bombs of
	// 10 MiB at once in the full-size run): the bound is twice that.
	r.heapBound(f, uint64(conns*len(targets))*uint64(room)*24)
}
