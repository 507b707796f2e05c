package rpctool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMalformedAddressesExit2: a malformed address on the command line
// (call's ADDR, rpcload's --remote, serve's --advertise and --register)
// is a bad command line: exit 2, one line naming the address and what is
// wrong with it, before anything is dialed ("5500" was dialed, and found
// unreachable: exit 1).
func TestMalformedAddressesExit2(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		cmd  func(context.Context, []string, io.Writer, io.Writer) int
		args []string
		want string
	}{
		{Call, []string{"5500", "Bench/Add", "a=1"}, `ADDR "5500": a port alone (want HOST:PORT, e.g. 127.0.0.1:5500)`},
		{Call, []string{"localhost", "A/B"}, `ADDR "localhost": no port`},
		{Call, []string{"[::1]", "A/B"}, `ADDR "[::1]": no port`},
		{Call, []string{"127.0.0.1:abc", "A/B"}, `ADDR "127.0.0.1:abc": port "abc" is not a number from 1 to 65535`},
		{Call, []string{"127.0.0.1:0", "A/B"}, `port "0" is not a number from 1 to 65535`},
		{Call, []string{"127.0.0.1:70000", "A/B"}, `port "70000"`},
		{Call, []string{"tcp://:5500x", "A/B"}, `ADDR "tcp://:5500x": port "5500x"`},
		{Call, []string{"udp://5500", "A/B"}, `ADDR "udp://5500": a port alone`},
		{Call, []string{"http://5500/", "A/B"}, `ADDR "http://5500/": host "5500" is a number`},
		{Call, []string{"ws://h:x/", "A/B"}, `ADDR "ws://h:x/": not a URL`},
		{Call, []string{"ftp://127.0.0.1:1", "A/B"}, `ADDR "ftp://127.0.0.1:1": unsupported server address scheme "ftp"`},
		{Call, []string{"127.0.0.1:1,5501", "A/B"}, `ADDR "5501": a port alone`},
		{Call, []string{" , ", "A/B"}, `no server address`},
		{Call, []string{"--http", "5500", "A/B"}, `ADDR "http://5500": host "5500" is a number`},
		{Call, []string{"etcd://127.0.0.1:x/bench", "A/B"}, `etcd member "127.0.0.1:x" is not HOST:PORT: port "x"`},
		{Load, []string{"--remote", "5500"}, `--remote "5500": a port alone`},
		{Load, []string{"--remote", "127.0.0.1:abc"}, `--remote "127.0.0.1:abc": port "abc"`},
		{Load, []string{"--remote", "ftp://127.0.0.1:1"}, `unsupported server address scheme "ftp"`},
		{Load, []string{"--impl", "netrpc", "--remote", "udp://127.0.0.1:5500"}, `--remote "udp://127.0.0.1:5500": scheme "udp": want tcp:// or none`},
		{Load, []string{"--impl", "netrpc", "--remote", "a:1,b:2"}, `--impl netrpc takes one address`},
		{Load, []string{"--remote", "etcd://5500/bench"}, `etcd member "5500" is not HOST:PORT: a port alone`},
		{Serve, []string{"--register", "etcd://127.0.0.1:2379/bench", "--advertise", "5500"}, `--advertise "5500": a port alone`},
		{Serve, []string{"--register", "etcd://127.0.0.1:2379/bench", "--advertise", "10.0.0.1:0"}, `--advertise "10.0.0.1:0": port "0"`},
		{Serve, []string{"--register", "etcd://127.0.0.1:2379/bench", "--advertise", "[::]:5500"}, `--advertise "[::]:5500": :: is no address a client can dial`},
		{Serve, []string{"--register", "etcd://2379/bench"}, `etcd member "2379" is not HOST:PORT: a port alone`},
		{Serve, []string{"--host", "5500"}, `--host "5500": want an IP address`},
	} {
		var out, errOut bytes.Buffer
		code := c.cmd(ctx, c.args, &out, &errOut)
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line with %s", c.args, code, msg, c.want)
		}
	}
}

// TestCheckServersTakesWhatDialDials: the check refuses none of the
// addresses rpc.Dial dials.
func TestCheckServersTakesWhatDialDials(t *testing.T) {
	for _, a := range []string{
		"127.0.0.1:5500", "localhost:5500", "[::1]:5500", ":5500", "example.com:1", "127.0.0.1:5500/ignored",
		"tcp://127.0.0.1:5500", "tls://example.com:443", "udp://[::1]:5500",
		"ws://127.0.0.1:5500/", "wss://example.com/ws", "http://127.0.0.1:5500", "https://example.com", "http://h:8080/prefix",
		"a:1,b:2", " a:1 , b:2 ", "a:1,",
	} {
		if err := checkServers("ADDR", a, false); err != nil {
			t.Errorf("checkServers(%q): %v, want nil", a, err)
		}
	}
	if err := checkServers("--remote", "tcp://127.0.0.1:5500", true); err != nil {
		t.Errorf("net/rpc's tcp:// address: %v", err)
	}
}

// TestBadJSONArgumentSaysWhereInOneLine: an invalid JSON argument of 120
// KB is reported with encoding/json's reason and offset and an excerpt
// of at most 80 characters around the offset, in one short line, not
// echoed whole.
func TestBadJSONArgumentSaysWhereInOneLine(t *testing.T) {
	head := `{"big": "` + strings.Repeat("x", 60_000) + `", "b": `
	arg := head + `}, "tail": "` + strings.Repeat("y", 60_000) + `"}`
	var v any
	se, _ := json.Unmarshal([]byte(arg), &v).(*json.SyntaxError)
	if se == nil || se.Offset != int64(len(head)+1) {
		t.Fatalf("the argument's error: %v, want a syntax error at the '}' after %d bytes", se, len(head)+1)
	}
	var out, errOut bytes.Buffer
	code := Call(context.Background(), []string{"127.0.0.1:1", "A/B", arg}, &out, &errOut)
	msg := errOut.String()
	if code != 2 || strings.Count(msg, "\n") != 1 || len(msg) > 300 {
		t.Fatalf("exit %d, stderr (%d bytes) %.400q; want exit 2 and one short line", code, len(msg), msg)
	}
	for _, want := range []string{"not valid JSON", "invalid character '}' looking for beginning of value",
		fmt.Sprintf("after %d of its %d bytes", se.Offset, len(arg)), `"b": }, "tail"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr %q lacks %q", msg, want)
		}
	}
	_, ex, _ := strings.Cut(msg, "bytes: ")
	if n := utf8.RuneCountInString(strings.TrimSpace(ex)); n > maxExcerpt || !strings.HasPrefix(ex, "…x") || !strings.HasSuffix(ex, "y…\n") {
		t.Errorf("excerpt %q (%d characters): want at most %d, cut on both sides", ex, n, maxExcerpt)
	}

	// A key=value argument without '=' is cut too.
	errOut.Reset()
	long := strings.Repeat("z", 100_000)
	if code := Call(context.Background(), []string{"127.0.0.1:1", "A/B", long}, &out, &errOut); code != 2 || errOut.Len() > 200 ||
		!strings.Contains(errOut.String(), "argument of 100000 bytes, zzz") || !strings.Contains(errOut.String(), "want key=value") {
		t.Errorf("a 100 KB argument without '=': exit %d, stderr (%d bytes) %.300q; want 2 and a short line", code, errOut.Len(), errOut.String())
	}
}

// TestExcerpt: an excerpt is at most maxExcerpt characters of valid UTF-8
// (ellipses and escapes included), whatever the offset and the width of
// the characters around it, and holds the character just before the
// offset.
func TestExcerpt(t *testing.T) {
	for _, s := range []string{"short", strings.Repeat("a", 200), strings.Repeat("é", 100) + "!" + strings.Repeat("日本", 50),
		strings.Repeat("😀", 60), strings.Repeat("{\n\t\"k\": 1,\r\n\x00}", 20)} {
		for at := 0; at <= len(s); at++ {
			got := excerpt(s, at)
			if n := utf8.RuneCountInString(got); n > maxExcerpt || !utf8.ValidString(got) {
				t.Fatalf("excerpt(%.20q…, %d) = %q: %d characters, valid %v", s, at, got, n, utf8.ValidString(got))
			}
			if r, _ := utf8.DecodeLastRuneInString(s[:at]); at > 0 && r != utf8.RuneError && !strings.Contains(got, shown(r)) {
				t.Fatalf("excerpt(%.20q…, %d) = %q lacks %q, the character before the offset", s, at, got, r)
			}
		}
	}
	if got := excerpt("short", 2); got != "short" {
		t.Errorf("excerpt of a short string: %q, want it whole without ellipses", got)
	}
	if got, want := excerpt("[1,\n\t2,]", 8), `[1,\n\t2,]`; got != want {
		t.Errorf("excerpt with control characters: %q, want %q", got, want)
	}
}
