package rpctool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/rpc"
)

// callSynopsis is call's synopsis after the flags.
const callSynopsis = "ADDR ACTION [key=value … | JSON]"

// Call runs `lifenet call [flags] ADDR ACTION [key=value … | JSON]`: 0 when
// the call succeeded (its result on stdout), 1 when it failed, 2 for a bad
// command line (an address rpc cannot dial included).
func Call(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cliflag.New("call", callSynopsis, "  Call ACTION of any SRMP/NewLife server at ADDR (host:port, tcp://, udp://, ws://, http://, https://)\n"+
		"  and print its result. Arguments: key=value pairs (numbers and booleans as such, the rest as strings)\n"+
		"  or one JSON document; none for an action without arguments. --list lists the actions (Api/All).\n"+
		"  ADDR "+etcdSynopsis+" calls one of the servers registered in etcd (lifenet serve --register),\n"+
		"  chosen by --balancer.")
	useHTTP := fs.Bool("http", false, "call over HTTP (POST JSON) instead of SRMP")
	list := fs.Bool("list", false, "list the server's actions (Api/All); then ACTION is not given")
	timeout := fs.Duration("timeout", rpc.DefaultTimeout, "call timeout")
	token := fs.String("token", "", "token merged into the arguments (NewLife ApiClient.Token)")
	balancer := fs.String("balancer", "round-robin", "ADDR etcd://…: how the server is chosen: "+strings.Join(balancerNames(), ", "))
	key := fs.String("key", "", "ADDR etcd://…: the call's balancing key (--balancer hash sends a key to the same server)")
	if code, done := fs.Parse(args, stdout, stderr); done {
		return code
	}
	rest := fs.Args()
	err := errors.Join(
		cliflag.Check(len(rest) >= 1, "missing ADDR (usage: lifenet call [flags] %s)", callSynopsis),
		cliflag.Check(*list || len(rest) >= 2, "missing ACTION (or --list)"),
		cliflag.Check(!*list || len(rest) <= 1, "--list takes no ACTION or arguments"),
		cliflag.Between("timeout", *timeout, time.Millisecond, time.Hour),
		checkEtcdCall(rest, *useHTTP, *balancer, fs.Set()),
	)
	if err != nil {
		return cliflag.UsageError(stderr, "call", err)
	}
	action, params := "Api/All", []string(nil)
	if !*list {
		action, params = rest[1], rest[2:]
	}
	callArgs, err := parseCallArgs(params)
	if err != nil {
		return cliflag.UsageError(stderr, "call", err)
	}
	addr := rest[0]
	if *useHTTP && !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if isEtcd(addr) {
		return callEtcd(ctx, addr, action, callArgs, clusterOptions{balancer: *balancer, attempts: 3,
			client: rpc.ClientConfig{Timeout: *timeout, Token: *token}, resolve: min(*timeout, etcdResolveTimeout)}, *key, stdout, stderr)
	}
	cl, err := rpc.Dial(ctx, addr, rpc.ClientConfig{Timeout: *timeout, Token: *token})
	if errors.Is(err, rpc.ErrAddress) {
		return cliflag.UsageError(stderr, "call", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lifenet call: %v\n", err)
		return cliflag.ExitFail
	}
	defer cl.Close()
	var out []byte
	if err := cl.Invoke(ctx, action, callArgs, &out); err != nil {
		fmt.Fprintf(stderr, "lifenet call: %v\n", err)
		return cliflag.ExitFail
	}
	printResult(stdout, out)
	return cliflag.ExitOK
}

// checkEtcdCall checks call's flags against its ADDR: --balancer and
// --key for etcd:// only, --http not for it.
func checkEtcdCall(rest []string, useHTTP bool, balancer string, set map[string]bool) error {
	if len(rest) == 0 || !isEtcd(rest[0]) {
		return cliflag.Check(!set["balancer"] && !set["key"], "--balancer and --key need an ADDR %s", etcdSynopsis)
	}
	if _, err := parseEtcd(rest[0]); err != nil {
		return fmt.Errorf("ADDR %w", err)
	}
	return cliflag.First(
		cliflag.Check(!useHTTP, "--http: a call through etcd goes over SRMP (the servers' registered addresses)"),
		checkBalancer(balancer),
	)
}

// callEtcd makes call's call through a cluster client of the service in
// etcd, retrying (on another server) only a call that was never sent.
func callEtcd(ctx context.Context, addr, action string, args any, o clusterOptions, key string, stdout, stderr io.Writer) int {
	svc, _ := parseEtcd(addr) // checked
	cl, err := dialEtcd(ctx, svc, o)
	if err != nil {
		fmt.Fprintf(stderr, "lifenet call: %v\n", err)
		return cliflag.ExitFail
	}
	defer cl.Close()
	cctx := cl.callCtx(ctx)
	if key != "" {
		cctx = rpc.WithBalanceKey(cctx, key)
	}
	var out []byte
	if err := cl.Invoke(cctx, action, args, &out); err != nil {
		fmt.Fprintf(stderr, "lifenet call: %s: %v\n", svc, err)
		return cliflag.ExitFail
	}
	printResult(stdout, out)
	return cliflag.ExitOK
}

// parseCallArgs turns the command line's arguments into a call's: nothing,
// one JSON document, or key=value pairs (numbers and booleans as such,
// everything else as strings).
func parseCallArgs(params []string) (any, error) {
	if len(params) == 0 {
		return nil, nil
	}
	if len(params) == 1 && strings.IndexAny(strings.TrimSpace(params[0]), "{[") == 0 {
		if !json.Valid([]byte(params[0])) {
			return nil, fmt.Errorf("argument is not valid JSON: %s", params[0])
		}
		return json.RawMessage(params[0]), nil
	}
	obj := bytes.NewBufferString("{")
	for i, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q: want key=value or one JSON document", p)
		}
		if i > 0 {
			obj.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		obj.Write(kb)
		obj.WriteByte(':')
		if _, err := strconv.ParseFloat(v, 64); err == nil || v == "true" || v == "false" || v == "null" {
			obj.WriteString(v)
		} else {
			vb, _ := json.Marshal(v)
			obj.Write(vb)
		}
	}
	obj.WriteByte('}')
	return json.RawMessage(obj.Bytes()), nil
}

// printResult prints a result: JSON indented, text as it is.
func printResult(w io.Writer, out []byte) {
	var buf bytes.Buffer
	if json.Valid(out) && json.Indent(&buf, out, "", "  ") == nil {
		out = buf.Bytes()
	}
	fmt.Fprintf(w, "%s\n", out)
}
