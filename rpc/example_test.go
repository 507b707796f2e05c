package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log"
	"log/slog"

	"github.com/lifenet/lifenet/rpc"
)

// AddArgs holds Bench/Add's parameters: NewLife's several parameters are
// the fields of one struct, bound from {"a":1,"b":2} by name,
// case-insensitively.
type AddArgs struct{ A, B int32 }

// A server with one typed action and a client calling it over TCP. The
// port serves SRMP, HTTP and WebSocket alike: curl
// 'http://ADDR/Bench/Add?a=1&b=2' answers {"action":"Bench/Add","code":0,"data":3}.
func Example() {
	ctx := context.Background()
	srv, err := rpc.NewServer(rpc.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	err = rpc.Handle(srv, "Bench/Add", func(ctx context.Context, a AddArgs) (int32, error) { return a.A + a.B, nil })
	if err != nil {
		log.Fatal(err)
	}
	addr, err := srv.Listen(ctx, "tcp", "127.0.0.1:0") // port 0: any free port
	if err != nil {
		log.Fatal(err)
	}

	client, err := rpc.Dial(ctx, "tcp://"+addr.String(), rpc.ClientConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	sum, err := rpc.Call[int32](ctx, client, "Bench/Add", AddArgs{1, 2})
	fmt.Println(sum, err)
	// Output: 3 <nil>
}

// CalculatorController's exported methods become the actions
// Calculator/Add and Calculator/Negate.
type CalculatorController struct{}

func (CalculatorController) Add(a AddArgs) int32 { return a.A + a.B }

func (CalculatorController) Negate(ctx context.Context, n int) (int, error) { return -n, nil }

func ExampleServer_Register() {
	srv, err := rpc.NewServer(rpc.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Register(CalculatorController{}); err != nil {
		log.Fatal(err)
	}
	// Server.Process runs a request body without a socket.
	for _, call := range []struct {
		action string
		args   any
	}{{"Calculator/Add", AddArgs{2, 3}}, {"calculator/negate", 7}} {
		req, err := rpc.AppendRequest(nil, call.action, call.args)
		if err != nil {
			log.Fatal(err)
		}
		reply, isErr, _ := srv.Process(context.Background(), req, nil)
		// A reply body is the action name, then the result's length and text.
		fmt.Printf("%s → %s (error: %v)\n", call.action, reply[1+reply[0]+4:], isErr)
	}
	// Output:
	// Calculator/Add → 5 (error: false)
	// calculator/negate → -7 (error: false)
}

// serve starts a server on a free loopback port with setup's actions and
// returns it with a client of it: the examples' common start.
func serve(cfg rpc.Config, ccfg rpc.ClientConfig, setup func(*rpc.Server) error) (*rpc.Server, *rpc.Client) {
	ctx := context.Background()
	srv, err := rpc.NewServer(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := setup(srv); err != nil {
		log.Fatal(err)
	}
	addr, err := srv.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	client, err := rpc.Dial(ctx, "tcp://"+addr.String(), ccfg)
	if err != nil {
		log.Fatal(err)
	}
	return srv, client
}

// A streaming action yields items; the client ranges over them (NewLife's
// IAsyncEnumerable and InvokeStreamAsync). Calling it with Call instead
// fails at once.
func ExampleStream() {
	srv, client := serve(rpc.Config{}, rpc.ClientConfig{}, func(srv *rpc.Server) error {
		return rpc.HandleStream(srv, "Count/To", func(ctx context.Context, n int) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				for i := 1; i <= n; i++ {
					if !yield(i, nil) {
						return // the client left, or the connection ended
					}
				}
			}
		})
	})
	defer srv.Close()
	defer client.Close()
	ctx := context.Background()
	for n, err := range rpc.Stream[int](ctx, client, "Count/To", 3) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(n)
	}
	_, err := rpc.Call[int](ctx, client, "Count/To", 3)
	fmt.Println(errors.Is(err, rpc.ErrStreamAction))
	// Output:
	// 1
	// 2
	// 3
	// true
}

// A server pushes one-way messages to a client's session, which its
// OnPush gets (NewLife's IApiSession.InvokeOneWay).
func ExampleSession_Push() {
	pushes := make(chan string, 1)
	cfg := rpc.ClientConfig{OnPush: func(action string, data []byte) {
		pushes <- action + " " + string(data) // on the connection's reading goroutine: do not block
	}}
	srv, client := serve(rpc.Config{}, cfg, func(srv *rpc.Server) error {
		return rpc.Handle(srv, "News/Subscribe", func(ctx context.Context, topic string) (bool, error) {
			return true, rpc.SessionFrom(ctx).Push("News/Item", "hello, "+topic)
		})
	})
	defer srv.Close()
	defer client.Close()
	if _, err := rpc.Call[bool](context.Background(), client, "News/Subscribe", "gophers"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-pushes)
	// Output: News/Item hello, gophers
}

// Config.Authorize guards the actions; a call refused with 401 runs the
// client's Login, which gets a token and sets it, and is retried once.
// The token goes with every call after it.
func ExampleClientConfig_login() {
	authorize := func(ctx context.Context, s *rpc.Session, action string) error {
		if action != "User/Login" && s.Token() != "t-42" {
			return rpc.NewError(rpc.CodeUnauthorized, "log in first")
		}
		return nil
	}
	type credentials struct{ User, Password string }
	login := func(ctx context.Context, c *rpc.Client) error {
		token, err := rpc.Call[string](ctx, c, "User/Login", credentials{"ann", "secret"})
		if err == nil {
			c.SetToken(token)
		}
		return err
	}
	srv, client := serve(rpc.Config{Authorize: authorize}, rpc.ClientConfig{Login: login}, func(srv *rpc.Server) error {
		err := rpc.Handle(srv, "User/Login", func(ctx context.Context, c credentials) (string, error) {
			if c.User != "ann" || c.Password != "secret" {
				return "", rpc.NewError(rpc.CodeForbidden, "wrong password")
			}
			return "t-42", nil
		})
		if err != nil {
			return err
		}
		return rpc.Handle(srv, "Doc/Read", func(ctx context.Context, id int) (string, error) {
			return fmt.Sprintf("document %d", id), nil
		})
	})
	defer srv.Close()
	defer client.Close()
	doc, err := rpc.Call[string](context.Background(), client, "Doc/Read", 7)
	fmt.Println(doc, err, client.Token())
	// Output: document 7 <nil> t-42
}

// A handler chooses its reply's code with NewError or by wrapping one of
// the package's sentinels; the caller matches the code's sentinel with
// errors.Is and reads code and message with errors.As. Any other error's
// text stays on the server (its log), unless Config.ExposeErrors.
func Example_errors() {
	cfg := rpc.Config{Log: slog.New(slog.DiscardHandler)} // the hidden error's text would be logged here
	srv, client := serve(cfg, rpc.ClientConfig{}, func(srv *rpc.Server) error {
		return rpc.Handle(srv, "Order/Get", func(ctx context.Context, id int) (string, error) {
			switch {
			case id <= 0:
				return "", fmt.Errorf("%w: id %d must be positive", rpc.ErrArgs, id)
			case id == 13:
				return "", rpc.NewError(rpc.CodeForbidden, "not yours")
			case id > 100:
				return "", errors.New("db: connection to 10.0.0.5:5432 refused")
			}
			return "order", nil
		})
	})
	defer srv.Close()
	defer client.Close()
	ctx := context.Background()
	for _, id := range []int{0, 13, 101} {
		_, err := rpc.Call[string](ctx, client, "Order/Get", id)
		var ae *rpc.APIError
		errors.As(err, &ae)
		fmt.Println(rpc.CodeOf(err), errors.Is(err, rpc.ErrArgs), ae.Message)
	}
	_, err := rpc.Call[string](ctx, client, "Order/Nope", 1)
	fmt.Println(err, errors.Is(err, rpc.ErrNotFound))
	// Output:
	// 400 true rpc: arguments do not fit the action's parameter: id 0 must be positive
	// 403 false not yours
	// 500 false Internal Server Error
	// rpc: no action "Order/Nope" (404) true
}
