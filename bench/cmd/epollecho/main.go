// Command epollecho is a hand-rolled event-loop echo server (the design of
// gnet and netpoll: level-triggered epoll, one read per readiness event, no
// goroutine per connection), kept to show what such a loop costs against
// the standard library's goroutine-per-connection loop on this machine.
// bench/floor.sh runs it beside `lifenet load --server --impl raw` under
// the same client. It echoes every read back as it came and serves until
// --seconds pass. Linux only.
//
//	epollecho [--host 127.0.0.1] [--port 0] [--loops GOMAXPROCS] [--spin] [--seconds 600]
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 0, "port (0 picks a free one)")
	loops := flag.Int("loops", runtime.GOMAXPROCS(0), "event loops (one epoll instance each)")
	spin := flag.Bool("spin", false, "poll once without blocking (a raw system call) before each blocking wait")
	seconds := flag.Float64("seconds", 600, "exit after this many seconds")
	flag.Parse()
	if *loops < 1 || *loops > 64 {
		fmt.Fprintln(os.Stderr, "epollecho: --loops wants 1 to 64")
		os.Exit(2)
	}
	if *seconds <= 0 {
		fmt.Fprintln(os.Stderr, "epollecho: --seconds wants a positive number")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "epollecho:", err)
		os.Exit(1)
	}
	fmt.Printf("READY tcp://%s\n", ln.Addr())
	time.AfterFunc(time.Duration(*seconds*float64(time.Second)), func() { ln.Close() })
	if err := serve(ln, *loops, *spin); err != nil {
		fmt.Fprintln(os.Stderr, "epollecho:", err)
		os.Exit(1)
	}
}
