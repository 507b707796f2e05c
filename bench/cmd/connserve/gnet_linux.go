package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// stopWait bounds how long a server waits for its engine to stop.
const stopWait = 10 * time.Second

// gnetEcho is gnet's echo example: OnTraffic writes back what it read.
type gnetEcho struct {
	gnet.BuiltinEventEngine
	eng    gnet.Engine
	booted chan struct{} // closed by OnBoot, after which eng is set
}

func (s *gnetEcho) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	close(s.booted)
	return gnet.None
}

func (s *gnetEcho) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Next(-1)
	_, _ = c.Write(buf)
	return gnet.None
}

// serveGnet runs gnet's echo with multicore (an event loop per CPU) until
// ctx ends, then stops the engine (within stopWait). gnet binds a listener
// per loop under --reuseport, so for --port 0 a port is picked first (and
// held with SO_REUSEPORT until gnet has bound it too).
func serveGnet(ctx context.Context, cfg config, ready func(addr string)) error {
	port := cfg.Port
	var hold net.Listener // closed once gnet is listening, before READY
	if cfg.ReusePort && port == 0 {
		lc, err := listenConfig(true)
		if err != nil {
			return err
		}
		hold, err = lc.Listen(ctx, "tcp", net.JoinHostPort(cfg.Host, "0"))
		if err != nil {
			return err
		}
		defer hold.Close()
		port = hold.Addr().(*net.TCPAddr).Port
	}
	s := &gnetEcho{booted: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		errc <- gnet.Run(s, "tcp://"+net.JoinHostPort(cfg.Host, strconv.Itoa(port)),
			gnet.WithMulticore(true), gnet.WithReusePort(cfg.ReusePort), gnet.WithLogger(stderrLogger{}))
	}()
	select {
	case err := <-errc:
		if err == nil {
			err = fmt.Errorf("gnet.Run returned before booting")
		}
		return err
	case <-s.booted:
	}
	if hold != nil {
		hold.Close()
	}
	addr, err := gnetAddr(s.eng)
	if err != nil {
		_ = s.stop()
		<-errc
		return err
	}
	ready(addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := s.stop(); err != nil {
		return err
	}
	return <-errc
}

func (s *gnetEcho) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	return s.eng.Stop(ctx)
}

// gnetAddr is the address eng's listener is bound to.
func gnetAddr(eng gnet.Engine) (string, error) {
	fd, err := eng.Dup()
	if err != nil {
		return "", fmt.Errorf("the listener's descriptor: %w", err)
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return "", fmt.Errorf("getsockname: %w", err)
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return net.JoinHostPort(net.IP(sa.Addr[:]).String(), strconv.Itoa(sa.Port)), nil
	case *unix.SockaddrInet6:
		return net.JoinHostPort(net.IP(sa.Addr[:]).String(), strconv.Itoa(sa.Port)), nil
	}
	return "", fmt.Errorf("getsockname: %T is not an IP address", sa)
}

// stderrLogger is gnet's log on stderr (its default is stdout), so that
// stdout carries only the READY line.
type stderrLogger struct{}

func (stderrLogger) logf(level, format string, args []any) {
	fmt.Fprintf(os.Stderr, "[gnet] %s %s\n", level, fmt.Sprintf(format, args...))
}

func (l stderrLogger) Debugf(format string, args ...any) {}
func (l stderrLogger) Infof(format string, args ...any)  { l.logf("INFO", format, args) }
func (l stderrLogger) Warnf(format string, args ...any)  { l.logf("WARN", format, args) }
func (l stderrLogger) Errorf(format string, args ...any) { l.logf("ERROR", format, args) }
func (l stderrLogger) Fatalf(format string, args ...any) {
	l.logf("FATAL", format, args)
	os.Exit(1)
}
