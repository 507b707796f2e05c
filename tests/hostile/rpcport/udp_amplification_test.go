package rpcport_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// A UDP source address is never validated, so a spoofed one could turn
// the server into an amplifier: no reply to a UDP request is more than
// Config.UDPReplyFactor (3) times its size, for every built-in action, an
// unknown one and the benchmark controller's, called with no arguments or
// with a few. With the factor off (a trusted network), Api/All answers
// many times its request: the bound is what holds it.
func TestUDPRepliesAmplifyAtMostThreeTimes(t *testing.T) {
	actions := []string{"Api/All", "Api/Info", "Api/Health", "No/Such", "Bench/EchoString", "Bench/NoArg", "Bench/EchoPacket"}
	measure := func(cfg rpc.Config) map[string]float64 {
		_, ua := startPortUDP(t, cfg, nil)
		c, err := net.Dial("udp", ua)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		out := map[string]float64{}
		buf := make([]byte, 64<<10)
		for i, a := range actions {
			for _, args := range []any{nil, map[string]string{"s": "x"}} {
				req := srmpFrame(b0Request, byte(i+1), request(t, a, args))
				c.Write(req)
				c.SetReadDeadline(time.Now().Add(patience))
				n, err := c.Read(buf)
				if err != nil {
					continue // dropped: not even its name and code fit
				}
				out[fmt.Sprintf("%s %v", a, args != nil)] = max(out[fmt.Sprintf("%s %v", a, args != nil)], float64(n)/float64(len(req)))
			}
		}
		return out
	}
	bounded := measure(rpc.Config{})
	var worst float64
	var rows []string
	for k, f := range bounded {
		worst = max(worst, f)
		rows = append(rows, fmt.Sprintf("%s %.1f×", k, f))
		if f > 3 {
			t.Errorf("%s: a reply %.1f times its request over UDP", k, f)
		}
	}
	if len(bounded) < len(actions) {
		t.Errorf("only %d of %d calls answered at all", len(bounded), 2*len(actions))
	}
	open := measure(rpc.Config{UDPReplyFactor: -1})
	t.Logf("FIGURES UDP amplification: worst %.1f× with the default UDPReplyFactor (3); Api/All %.1f× with it off | %s",
		worst, open["Api/All false"], strings.Join(rows, "; "))
	if open["Api/All false"] <= 3 {
		t.Errorf("Api/All with UDPReplyFactor off: %.1f×; the test no longer shows what the bound holds", open["Api/All false"])
	}
}
