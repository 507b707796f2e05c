package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// hooksServer starts a server with cfg and Bench/Add, and returns it with
// a client of it (cfg's Log is the caller's).
func hooksServer(cfg rpc.Config, ccfg rpc.ClientConfig, setup func(*rpc.Server)) (*rpc.Server, *rpc.Client) {
	srv, err := rpc.NewServer(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := rpc.Handle(srv, "Bench/Add", func(ctx context.Context, a AddArgs) (int32, error) { return a.A + a.B, nil }); err != nil {
		log.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	addr, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	client, err := rpc.Dial(context.Background(), addr.String(), ccfg)
	if err != nil {
		log.Fatal(err)
	}
	return srv, client
}

// An access log: a server interceptor that writes one line per call, with
// how the caller reached the server, the action, the code it answered and
// how long it took (rounded to the hour here, to print the same each run).
// [rpc.AccessLog] is the package's own, on log/slog.
func ExampleInterceptor() {
	accessLog := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		start := time.Now()
		err := next(ctx, c)
		fmt.Printf("%s %s %s code=%d took=%v\n", c.Info().Protocol(), c.Kind(), c.Action(), rpc.CodeOf(err), time.Since(start).Round(time.Hour))
		return err
	}
	srv, client := hooksServer(rpc.Config{Interceptors: []rpc.Interceptor{accessLog}}, rpc.ClientConfig{}, nil)
	defer srv.Close()
	defer client.Close()

	ctx := context.Background()
	sum, _ := rpc.Call[int32](ctx, client, "Bench/Add", AddArgs{1, 2})
	_, err := rpc.Call[int32](ctx, client, "Bench/Sub", AddArgs{1, 2})
	fmt.Println(sum, errors.Is(err, rpc.ErrNotFound))
	// Output:
	// SRMP unary Bench/Add code=0 took=0s
	// SRMP unary Bench/Sub code=404 took=0s
	// 3 true
}

// An auth interceptor: calls of Admin/… need the token "root". The client
// sends its token with every call; the server's session keeps the last one
// shown, which CallInfo.Token gives.
func ExampleInterceptor_auth() {
	auth := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		if len(c.Action()) > 6 && c.Action()[:6] == "Admin/" && c.Info().Token() != "root" {
			return rpc.NewError(rpc.CodeForbidden, "admins only")
		}
		return next(ctx, c)
	}
	srv, client := hooksServer(rpc.Config{Interceptors: []rpc.Interceptor{auth}}, rpc.ClientConfig{}, func(s *rpc.Server) {
		rpc.Handle(s, "Admin/Restart", func(context.Context, struct{}) (string, error) { return "restarting", nil })
	})
	defer srv.Close()
	defer client.Close()

	ctx := context.Background()
	_, err := rpc.Call[string](ctx, client, "Admin/Restart", nil)
	fmt.Println(rpc.CodeOf(err), err)
	client.SetToken("root")
	r, err := rpc.Call[string](ctx, client, "Admin/Restart", nil)
	fmt.Println(r, err)
	// Output:
	// 403 rpc: admins only (403)
	// restarting <nil>
}

// Metadata round trip: the client puts a tenant in its call's context; the
// server, which names the key in MetadataKeys, finds it in the handler's
// CallInfo. On the wire it is a key of the argument object, as NewLife's
// ApiClient.Headers are: {"input":"hi","Tenant":"acme"}.
func ExampleAppendToOutgoingContext() {
	srv, client := hooksServer(rpc.Config{MetadataKeys: []string{"Tenant"}}, rpc.ClientConfig{}, func(s *rpc.Server) {
		rpc.Handle(s, "Echo/Say", func(ctx context.Context, in string) (string, error) {
			tenant := rpc.CallInfoFrom(ctx).Metadata().Get("Tenant")
			return tenant + ": " + in, nil
		})
	})
	defer srv.Close()
	defer client.Close()

	ctx := rpc.AppendToOutgoingContext(context.Background(), "Tenant", "acme")
	r, err := rpc.Call[string](ctx, client, "Echo/Say", map[string]string{"input": "hi"})
	fmt.Println(r, err)
	// Output: acme: hi <nil>
}

// A deadline reaching a handler: with SendTimeout the client sends the
// call's remaining time (Timeout-Ms), and the handler's context ends when
// the caller stops waiting, so the server stops work nobody waits for.
func ExampleClientConfig_sendTimeout() {
	stopped := make(chan error, 1)
	srv, client := hooksServer(rpc.Config{}, rpc.ClientConfig{SendTimeout: true}, func(s *rpc.Server) {
		rpc.Handle(s, "Report/Build", func(ctx context.Context, _ struct{}) (string, error) {
			_, sent := rpc.CallInfoFrom(ctx).Deadline()
			fmt.Println("deadline sent:", sent)
			<-ctx.Done() // a long job that watches its context
			stopped <- ctx.Err()
			return "", ctx.Err()
		})
	})
	defer srv.Close()
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := rpc.Call[string](ctx, client, "Report/Build", nil)
	fmt.Println("caller:", errors.Is(err, rpc.ErrTimeout))
	fmt.Println("handler:", <-stopped)
	// Output:
	// deadline sent: true
	// caller: true
	// handler: context deadline exceeded
}
