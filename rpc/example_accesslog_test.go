package rpc_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/rpc"
)

// steady drops what changes from run to run (the time, the duration, the
// ports and session IDs), so that the example prints the same each time.
func steady(_ []string, a slog.Attr) slog.Attr {
	switch a.Key {
	case slog.TimeKey, logattr.Duration, logattr.Remote, logattr.Session:
		return slog.Attr{}
	}
	return a
}

// An access log on both sides: a line per call served and per call made,
// with the action, the reply's code, the bytes of the arguments and the
// result, the peer and the protocol (and the duration, the session and the
// remote address, which steady drops here). A server's 404 carries
// NewLife's text, which its client replaces with its own. The server's
// and the client's Log get their own lines (and their transports') too.
func ExampleAccessLog() {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: steady}))
	srv, err := rpc.NewServer(rpc.Config{Log: logger, Interceptors: []rpc.Interceptor{rpc.AccessLog(logger, slog.LevelInfo)}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	err = rpc.Handle(srv, "Bench/Add", func(ctx context.Context, a AddArgs) (int32, error) { return a.A + a.B, nil })
	if err != nil {
		log.Fatal(err)
	}
	addr, err := srv.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	client, err := rpc.Dial(ctx, addr.String(), rpc.ClientConfig{Log: logger, Interceptors: []rpc.Interceptor{rpc.AccessLog(logger, slog.LevelInfo)}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	sum, err := rpc.Call[int32](ctx, client, "Bench/Add", AddArgs{1, 2})
	fmt.Println(sum, err)
	_, err = rpc.Call[int32](ctx, client, "Bench/Sub", AddArgs{1, 2})
	fmt.Println(rpc.CodeOf(err))
	// Output:
	// level=INFO msg="rpc: call served" action=Bench/Add code=0 bytes_in=13 bytes_out=1 protocol=srmp
	// level=INFO msg="rpc: call made" action=Bench/Add code=0 bytes_in=1 bytes_out=13 protocol=srmp
	// 3 <nil>
	// level=INFO msg="rpc: call served" action=Bench/Sub code=404 bytes_in=13 bytes_out=0 protocol=srmp err="rpc: 无法找到名为[Bench/Sub]的服务！ (404)"
	// level=INFO msg="rpc: call made" action=Bench/Sub code=404 bytes_in=0 bytes_out=13 protocol=srmp err="rpc: no action \"Bench/Sub\" (404)"
	// 404
}
