package rpcport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// bystanders are the legitimate clients beside an attack: an SRMP client
// (rpc.Client over tcp://) and an HTTP client (net/http, keep-alive), each
// calling Bench/EchoString with a payload of its own in a loop, paced so as
// to leave the attack the machine's two cores. Every call must get its own
// reply: an error, a wrong reply or a reply later than callTimeout fails
// the test.
type bystanders struct {
	stop chan struct{}
	wg   sync.WaitGroup

	srmp *rpc.Client
	http *http.Client
	tr   *http.Transport

	mu        sync.Mutex
	served    map[string]int
	failures  []string // the first few
	failed    int
	latencies []time.Duration
}

// bystanderPace is the pause between one bystander's calls.
const bystanderPace = 2 * time.Millisecond

// callTimeout bounds a bystander's call: far past what a served call takes
// on a loaded machine, far short of the attacks' timeouts (Expire,
// SendStallTimeout), so a bystander held up by an attack fails.
var callTimeout = 4 * time.Second * slow()

// startBystanders starts the legitimate clients of the port at addr; stop
// them with finish.
func startBystanders(t testing.TB, addr string) *bystanders {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cl, err := rpc.Dial(ctx, "tcp://"+addr, rpc.ClientConfig{Timeout: callTimeout})
	if err != nil {
		t.Fatalf("bystander dial: %v", err)
	}
	tr := &http.Transport{MaxConnsPerHost: 1, DisableCompression: true}
	b := &bystanders{
		stop:   make(chan struct{}),
		srmp:   cl,
		tr:     tr,
		http:   &http.Client{Transport: tr, Timeout: callTimeout},
		served: make(map[string]int),
	}
	b.wg.Go(func() { b.loop("srmp", b.callSRMP) })
	b.wg.Go(func() { b.loop("http", func(i int) error { return b.callHTTP(addr, i) }) })
	return b
}

func (b *bystanders) loop(kind string, call func(i int) error) {
	t := time.NewTicker(bystanderPace)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		start := time.Now()
		err := call(i)
		d := time.Since(start)
		b.mu.Lock()
		if err != nil {
			b.failed++
			if len(b.failures) < 5 {
				b.failures = append(b.failures, fmt.Sprintf("%s call %d after %v: %v", kind, i, d, err))
			}
		} else {
			b.served[kind]++
			b.latencies = append(b.latencies, d)
		}
		b.mu.Unlock()
	}
}

func (b *bystanders) callSRMP(i int) error {
	want := "srmp " + strconv.Itoa(i)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	got, err := rpc.Call[string](ctx, b.srmp, "Bench/EchoString", want)
	switch {
	case err != nil:
		return err
	case got != want:
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

func (b *bystanders) callHTTP(addr string, i int) error {
	want := "http " + strconv.Itoa(i)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/Bench/EchoString", strings.NewReader(strconv.Quote(want)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return err
	case resp.StatusCode != http.StatusOK || string(body) != envelope("Bench/EchoString", strconv.Quote(want)):
		return fmt.Errorf("status %d, body %.80q", resp.StatusCode, body)
	}
	return nil
}

// halt stops the bystanders and closes their connections.
func (b *bystanders) halt() {
	close(b.stop)
	b.wg.Wait()
	b.srmp.Close()
	b.tr.CloseIdleConnections()
}

// bystanderFigures are what the legitimate clients saw.
type bystanderFigures struct {
	SRMP, HTTP, Failed int
	P99, Max           time.Duration
}

func (f bystanderFigures) String() string {
	return fmt.Sprintf("legitimate calls served %d SRMP + %d HTTP, failed %d, p99 %s, max %s", f.SRMP, f.HTTP, f.Failed, ms(f.P99), ms(f.Max))
}

// finish stops the bystanders and fails the test if any call failed or
// either client was never served.
func (b *bystanders) finish(t testing.TB) bystanderFigures {
	t.Helper()
	b.halt()
	b.mu.Lock()
	defer b.mu.Unlock()
	slices.Sort(b.latencies)
	f := bystanderFigures{SRMP: b.served["srmp"], HTTP: b.served["http"], Failed: b.failed}
	if n := len(b.latencies); n > 0 {
		f.P99, f.Max = b.latencies[(n*99)/100], b.latencies[n-1]
	}
	for _, msg := range b.failures {
		t.Errorf("legitimate client: %s", msg)
	}
	if b.failed > len(b.failures) {
		t.Errorf("legitimate clients: %d failed calls in all", b.failed)
	}
	if f.SRMP == 0 || f.HTTP == 0 {
		t.Errorf("legitimate clients were not served during the attack: %v", f)
	}
	return f
}
