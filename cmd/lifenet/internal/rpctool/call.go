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
	"unicode"
	"unicode/utf8"

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
		checkCallAddr(rest, *useHTTP),
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
	addr := callAddr(rest[0], *useHTTP)
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
	if overHTTP(addr) {
		err = cl.Invoke(ctx, action, callArgs, &out)
	} else {
		err = callWatched(ctx, addr, rpc.ClientConfig{Timeout: *timeout, Token: *token}, cl, action, callArgs, &out)
	}
	if errors.Is(err, ErrSilentPeer) {
		fmt.Fprintf(stderr, "lifenet call: %s: %v\n", addr, err)
		return cliflag.ExitFail
	}
	if err != nil {
		fmt.Fprintf(stderr, "lifenet call: %v\n", err)
		return cliflag.ExitFail
	}
	printResult(stdout, out)
	return cliflag.ExitOK
}

// callAddr is the address call dials: ADDR, with --http http:// when it
// has no scheme.
func callAddr(addr string, useHTTP bool) string {
	if useHTTP && !strings.Contains(addr, "://") {
		return "http://" + addr
	}
	return addr
}

// overHTTP reports whether rpc.Dial takes addrs (a list) for HTTP
// servers, which rpc calls with net/http: probe is for SRMP peers.
func overHTTP(addrs string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(addrs), ",")
	first = strings.ToLower(strings.TrimSpace(first))
	return strings.HasPrefix(first, "http://") || strings.HasPrefix(first, "https://")
}

// checkCallAddr checks call's ADDR, unless it is an etcd address
// (checkEtcdCall's): a malformed one is a usage error that says what is
// wrong, not a server that cannot be reached.
func checkCallAddr(rest []string, useHTTP bool) error {
	if len(rest) == 0 || isEtcd(rest[0]) {
		return nil
	}
	return checkServers("ADDR", callAddr(rest[0], useHTTP), false)
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
		if err := checkJSON(params[0]); err != nil {
			return nil, err
		}
		return json.RawMessage(params[0]), nil
	}
	obj := bytes.NewBufferString("{")
	for i, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			if len(p) > maxExcerpt {
				return nil, fmt.Errorf("argument of %d bytes, %s: want key=value or one JSON document", len(p), excerpt(p, 0))
			}
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

// maxExcerpt is the longest excerpt of an argument an error shows, in
// characters, its ellipses included.
const maxExcerpt = 80

// checkJSON reports an argument that is not valid JSON: what is wrong,
// the offset where encoding/json found it, and an excerpt of at most
// maxExcerpt characters around it (the argument may be megabytes).
func checkJSON(arg string) error {
	if json.Valid([]byte(arg)) {
		return nil
	}
	var se *json.SyntaxError
	if err := json.Unmarshal([]byte(arg), new(any)); !errors.As(err, &se) {
		return fmt.Errorf("argument is not valid JSON (%v)", err) // Valid and Unmarshal disagree: not expected
	}
	return fmt.Errorf("argument is not valid JSON: %v, after %d of its %d bytes: %s", se, se.Offset, len(arg), excerpt(arg, int(se.Offset)))
}

// excerpt is at most maxExcerpt characters of s around byte offset at
// (encoding/json's Offset: the offending byte is just before it), with …
// where s goes on before or after. Control characters show escaped (\n),
// each escape counted as the characters it takes.
func excerpt(s string, at int) string {
	at = min(max(at, 0), len(s))
	budget := maxExcerpt - 2 // the ellipses
	var left []string
	from, used := at, 0
	grow := func(limit int) { // leftwards from from, to limit characters in all
		for from > 0 {
			r, size := utf8.DecodeLastRuneInString(s[:from])
			d := shown(r)
			if used+utf8.RuneCountInString(d) > limit {
				return
			}
			left = append(left, d)
			used += utf8.RuneCountInString(d)
			from -= size
		}
	}
	grow(budget / 2)
	var right strings.Builder
	to := at
	for to < len(s) {
		r, size := utf8.DecodeRuneInString(s[to:])
		d := shown(r)
		if used+utf8.RuneCountInString(d) > budget {
			break
		}
		right.WriteString(d)
		used += utf8.RuneCountInString(d)
		to += size
	}
	grow(budget) // what the right side left unused
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	for i := len(left) - 1; i >= 0; i-- {
		b.WriteString(left[i])
	}
	b.WriteString(right.String())
	if to < len(s) {
		b.WriteString("…")
	}
	return b.String()
}

// shown is how excerpt shows r: itself, or escaped if it is a control
// character.
func shown(r rune) string {
	switch {
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r == '\t':
		return `\t`
	case unicode.IsControl(r):
		return fmt.Sprintf(`\u%04x`, r)
	}
	return string(r)
}

// printResult prints a result: JSON indented, text as it is.
func printResult(w io.Writer, out []byte) {
	var buf bytes.Buffer
	if json.Valid(out) && json.Indent(&buf, out, "", "  ") == nil {
		out = buf.Bytes()
	}
	fmt.Fprintf(w, "%s\n", out)
}
