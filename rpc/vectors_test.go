package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// unhex turns spaced hex as docs/PROTOCOL.md writes it (with | separators)
// into bytes.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type addArgs struct {
	A int32 `json:"a"`
	B int32 `json:"b"`
}

// benchServer serves the actions that the vectors R1–R8 call (R1–R7 are
// the RPC vectors of docs/PROTOCOL.md §5; R8 is their HTTP form).
func benchServer(t testing.TB, cfg rpc.Config) (*rpc.Server, string) {
	t.Helper()
	srv, err := rpc.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	must(t, rpc.Handle(srv, "Bench/Add", func(_ context.Context, a addArgs) (int32, error) { return a.A + a.B, nil }))
	must(t, rpc.Handle(srv, "Bench/NoArg", func(context.Context, struct{}) (int32, error) { return 42, nil }))
	must(t, rpc.Handle(srv, "Bench/EchoPacket", func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
	must(t, rpc.Handle(srv, "Bench/EchoString", func(_ context.Context, s string) (string, error) { return s, nil }))
	must(t, rpc.Handle(srv, "User/Login", func(context.Context, struct{}) (string, error) {
		return "", rpc.NewError(401, "Unauthorized")
	}))
	addr, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, addr.String()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// exchange writes req on a fresh connection and reads len(want) bytes.
func exchange(t *testing.T, conn net.Conn, req []byte, n int) []byte {
	t.Helper()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return got
}

func TestServerAnswersGoldenVectors(t *testing.T) {
	_, addr := benchServer(t, rpc.Config{})
	conn, err := net.Dial("tcp", addr)
	must(t, err)
	defer conn.Close()
	cases := []struct{ name, req, reply string }{
		{"R1/R2 Bench/Add", "01 01 1B 00 09 42 65 6E 63 68 2F 41 64 64 0D 00 00 00 7B 22 61 22 3A 31 2C 22 62 22 3A 32 7D",
			"81 01 0F 00 | 09 42 65 6E 63 68 2F 41 64 64 | 01 00 00 00 | 33"},
		{"R3 unknown action", "01 02 0B 00 0A 42 65 6E 63 68 2F 4E 6F 70 65",
			"C1 02 3D 00 | 0A 42 65 6E 63 68 2F 4E 6F 70 65 | 94 01 00 00 | 2A 00 00 00 | E6 97 A0 E6 B3 95 E6 89 BE E5 88 B0 E5 90 8D E4 B8 BA 5B 42 65 6E 63 68 2F 4E 6F 70 65 5D E7 9A 84 E6 9C 8D E5 8A A1 EF BC 81"},
		{"R4 Bench/NoArg", "01 03 0C 00 | 0B 42 65 6E 63 68 2F 4E 6F 41 72 67",
			"81 03 12 00 | 0B 42 65 6E 63 68 2F 4E 6F 41 72 67 | 02 00 00 00 | 34 32"},
		{"R5 Bench/EchoPacket", "01 04 19 00 | 10 42 65 6E 63 68 2F 45 63 68 6F 50 61 63 6B 65 74 | 04 00 00 00 | 00 01 02 03",
			"81 04 19 00 | 10 42 65 6E 63 68 2F 45 63 68 6F 50 61 63 6B 65 74 | 04 00 00 00 | 00 01 02 03"},
		{"R6 APIError 401", "01 05 0B 00 | 0A 55 73 65 72 2F 4C 6F 67 69 6E",
			"C1 05 1F 00 | 0A 55 73 65 72 2F 4C 6F 67 69 6E | 91 01 00 00 | 0C 00 00 00 | 55 6E 61 75 74 68 6F 72 69 7A 65 64"},
	}
	for _, c := range cases {
		want := unhex(t, c.reply)
		if got := exchange(t, conn, unhex(t, c.req), len(want)); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got % X\nwant % X", c.name, got, want)
		}
	}
}

func TestServerAnswersHTTPOnTheSamePort(t *testing.T) {
	_, addr := benchServer(t, rpc.Config{})
	for _, req := range []string{
		"POST /Bench/Add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"a\":1,\"b\":2}",
		"GET /Bench/Add?a=1&b=2 HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		conn, err := net.Dial("tcp", addr)
		must(t, err)
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Write([]byte(req))
		must(t, err)
		r := bufio.NewReader(conn)
		resp, err := readResponse(r)
		conn.Close()
		must(t, err)
		if want := `{"action":"Bench/Add","code":0,"data":3}`; resp != want {
			t.Errorf("%q:\n got %s\nwant %s", req[:20], resp, want)
		}
	}
}

func TestClientSendsGoldenRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 31)
		io.ReadFull(c, b)
		got <- b
		c.Write(unhex(t, "81 01 0F 00 | 09 42 65 6E 63 68 2F 41 64 64 | 01 00 00 00 | 33"))
	}()
	cl, err := rpc.Dial(context.Background(), "tcp://"+ln.Addr().String(), rpc.ClientConfig{})
	must(t, err)
	defer cl.Close()
	sum, err := rpc.Call[int32](context.Background(), cl, "Bench/Add", addArgs{1, 2})
	must(t, err)
	want := unhex(t, "01 01 1B 00 09 42 65 6E 63 68 2F 41 64 64 0D 00 00 00 7B 22 61 22 3A 31 2C 22 62 22 3A 32 7D")
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("request:\n got % X\nwant % X", b, want)
	}
	if sum != 3 {
		t.Errorf("result %d, want 3", sum)
	}
}

func TestClientRoundTrips(t *testing.T) {
	_, addr := benchServer(t, rpc.Config{})
	ctx := context.Background()
	for _, scheme := range []string{"tcp", "ws", "http"} {
		t.Run(scheme, func(t *testing.T) {
			cl, err := rpc.Dial(ctx, scheme+"://"+addr, rpc.ClientConfig{})
			must(t, err)
			defer cl.Close()
			sum, err := rpc.Call[int32](ctx, cl, "bench/add", addArgs{20, 22})
			if err != nil || sum != 42 {
				t.Fatalf("Bench/Add: %d, %v", sum, err)
			}
			if scheme != "http" {
				n, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil)
				if err != nil || n != 42 {
					t.Fatalf("Bench/NoArg: %d, %v", n, err)
				}
				b, err := rpc.Call[[]byte](ctx, cl, "Bench/EchoPacket", []byte{1, 2, 3})
				if err != nil || !bytes.Equal(b, []byte{1, 2, 3}) {
					t.Fatalf("EchoPacket: %v, %v", b, err)
				}
			}
			_, err = rpc.Call[string](ctx, cl, "User/Login", map[string]string{"user": "x"})
			var ae *rpc.APIError
			if !errors.As(err, &ae) || ae.Code != 401 || ae.Message != "Unauthorized" {
				t.Fatalf("User/Login: %v", err)
			}
			_, err = rpc.Call[string](ctx, cl, "Bench/Nope", map[string]int{"a": 1})
			if !errors.As(err, &ae) || ae.Code != 404 {
				t.Fatalf("Bench/Nope: %v", err)
			}
		})
	}
}

// readResponse reads one HTTP response and returns its body.
func readResponse(r *bufio.Reader) (string, error) {
	n := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			n = 0
			for _, c := range strings.TrimSpace(v) {
				n = n*10 + int(c-'0')
			}
		}
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return string(b), err
}
