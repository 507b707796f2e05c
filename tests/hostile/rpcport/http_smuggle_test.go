package rpcport_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// smuggled is the request a smuggling shape hides in its body: served
// only by a server that frames the body otherwise than the shape's
// honest reading.
const smuggled = "GET /Smuggle/Hit HTTP/1.1\r\nHost: rpcport\r\n\r\n"

// smuggleRow is one request that frames its body two ways at once.
type smuggleRow struct {
	name   string
	req    string
	status int // the status it must get; 0: any, answered once
}

// smuggleRows are the shapes: both framings at once (CL.TE, TE.CL),
// obfuscated Transfer-Encodings (TE.TE), Content-Lengths that disagree or
// do not parse, and heads the standard library refuses. Whichever framing
// the port takes, the smuggled request must never be served.
func smuggleRows() []smuggleRow {
	chunk := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(smuggled), smuggled)
	post := "POST /Bench/EchoString HTTP/1.1\r\nHost: rpcport\r\nContent-Type: text/plain\r\n"
	cl := func(n int) string { return "Content-Length: " + strconv.Itoa(n) + "\r\n" }
	return []smuggleRow{
		{"CL.TE", post + cl(5+len(smuggled)) + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, 0},
		{"TE.CL", post + "Transfer-Encoding: chunked\r\n" + cl(4) + "\r\n" + chunk, 0},
		{"TE.TE, a second TE unknown", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n" + cl(4) + "\r\n" + chunk, 0},
		{"TE xchunked", post + "Transfer-Encoding: xchunked\r\n" + cl(4) + "\r\n" + chunk, 0},
		{"TE chunked, identity", post + "Transfer-Encoding: chunked, identity\r\n" + cl(4) + "\r\n" + chunk, 0},
		{"TE after a tab", post + "Transfer-Encoding:\tchunked\r\n" + cl(4) + "\r\n" + chunk, 0},
		{"TE in capitals", post + "TRANSFER-ENCODING: CHUNKED\r\n" + cl(4) + "\r\n" + chunk, 0},
		{"TE folded (obs-fold)", post + "Transfer-Encoding: x\r\n chunked\r\n" + cl(4) + "\r\n" + chunk, 0},
		{"TE on HTTP/1.0", strings.Replace(post, "HTTP/1.1", "HTTP/1.0", 1) + "Transfer-Encoding: chunked\r\n" + cl(4) + "\r\n" + chunk, 0},
		{"two Content-Lengths", post + cl(3) + cl(3+len(smuggled)) + "\r\nabc" + smuggled, 0},
		{"Content-Length list", post + "Content-Length: 3, " + strconv.Itoa(3+len(smuggled)) + "\r\n\r\nabc" + smuggled, 0},
		{"Content-Length +3", post + "Content-Length: +3\r\n\r\nabc" + smuggled, 0},
		{"Content-Length 0x3", post + "Content-Length: 0x3\r\n\r\nabc" + smuggled, 0},
		{"Content-Length -1", post + "Content-Length: -1\r\n\r\nabc" + smuggled, 0},
		{"Content-Length past int64", post + "Content-Length: 99999999999999999999\r\n\r\nabc" + smuggled, 0},
		// Issue 26 F7: a header the standard library's rules refuse is a
		// 400 (RFC 9112 §5.1: behind a proxy that reads a
		// "Transfer-Encoding : chunked" as chunked, the hidden request was
		// served), and so is HTTP/1.1 without Host (§3.2).
		{"Transfer-Encoding : chunked (a space before the colon)", post + "Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled, 400},
		{"Content-Length : 3 (a space before the colon)", post + "Content-Length : 3\r\n\r\nabc" + smuggled, 400},
		{"a header value with a control byte", post + "X-A: a\x01b\r\n" + cl(3) + "\r\nabc" + smuggled, 400},
		{"two Hosts", post + "Host: other\r\n" + cl(3) + "\r\nabc" + smuggled, 400},
		{"HTTP/1.1 without Host", "GET /Bench/NoArg HTTP/1.1\r\n\r\n" + smuggled, 400},
	}
}

// TE+CL smuggling shapes and invalid heads, each on several connections at
// once beside the bystanders: each is answered exactly once (or refused
// with a 4xx and the connection ended; the invalid heads with a 400), and
// the request hidden in its body is never served.
func TestHTTPSmuggling(t *testing.T) {
	testSmuggling(t, smuggleRows())
}

// testSmuggling runs rows on a port whose Smuggle/Hit action counts the
// smuggled requests it serves.
func testSmuggling(t *testing.T, rows []smuggleRow) {
	conns := size(8, 2, 32)
	var hits atomic.Int64
	r := attack(t, rpc.Config{}, func(srv *rpc.Server) {
		handle(t, srv, "Smuggle/Hit", func(context.Context, struct{}) (int, error) { hits.Add(1); return 1, nil })
	})
	type got struct {
		row    string
		status []int
		err    error
	}
	results := make(chan got, conns*len(rows))
	for range conns {
		for _, row := range rows {
			rc := r.dial()
			go func() {
				rc.write([]byte(row.req))
				g := got{row: row.name}
				resp, _, err := rc.readHTTP()
				if err != nil {
					g.err = fmt.Errorf("no answer: %w", err)
					results <- g
					return
				}
				g.status = append(g.status, resp.StatusCode)
				// Nothing more: the connection ends, or stays quiet.
				if more, _, err := rc.readHTTPWithin(300 * time.Millisecond); err == nil {
					g.status = append(g.status, more.StatusCode)
				}
				results <- g
			}()
		}
	}
	seen := map[string]string{}
	for range conns * len(rows) {
		g := <-results
		row := rowNamed(rows, g.row)
		switch {
		case g.err != nil:
			t.Errorf("%s: %v", g.row, g.err)
		case len(g.status) != 1:
			t.Errorf("%s: answered %v; want one answer", g.row, g.status)
		case row.status != 0 && g.status[0] != row.status:
			t.Errorf("%s: answered %d; want %d", g.row, g.status[0], row.status)
		}
		seen[g.row] = fmt.Sprint(g.status)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the smuggled request was served %d times", n)
	}
	var b strings.Builder
	for _, row := range rows {
		fmt.Fprintf(&b, "%s %s; ", row.name, seen[row.name])
	}
	r.end("HTTP smuggling shapes", "%d shapes × %d connections, the smuggled request served %d times: %s", len(rows), conns, hits.Load(), b.String())
}

func rowNamed(rows []smuggleRow, name string) smuggleRow {
	for _, r := range rows {
		if r.name == name {
			return r
		}
	}
	panic("no row " + name)
}
