//go:build !linux

package fleet

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Off Linux a fleet is a goroutine per connection: simple, at a few
// kilobytes a connection.

// startLoops starts the dispatcher that opens the connections as the ramp
// allows; stop ends every connection and returns once they have. It
// counts as one loop for the burst.
func startLoops(f *fleet) (stop func(), loops int, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var notDone atomic.Int64 // connections whose burst (or end) is still to come
	notDone.Store(int64(f.cfg.Conns))
	burstStart := make(chan struct{})
	doneOne := func() {
		if notDone.Add(-1) == 0 {
			f.loopsBurstEnd.Add(1)
		}
	}
	sem := make(chan struct{}, f.cfg.InFlight) // bursts in flight
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		started := false
		for ctx.Err() == nil {
			if !started && f.burstOn.Load() {
				close(burstStart)
				started = true
			}
			for i := f.next.Load(); i < int64(f.cfg.Conns) && i < f.allowed.Load() && f.inflight.Load() < int64(f.cfg.InFlight); i = f.next.Add(1) {
				f.inflight.Add(1)
				wg.Go(func() { runConn(ctx, f, int(i), burstStart, sem, doneOne) })
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
		if !started {
			close(burstStart)
		}
		if i := int(f.next.Load()); i < f.cfg.Conns && notDone.Add(-int64(f.cfg.Conns-i)) == 0 { // connections never opened
			f.loopsBurstEnd.Add(1)
		}
	})
	var once sync.Once
	return func() { once.Do(func() { f.stop.Store(true); cancel(); wg.Wait() }) }, 1, nil
}

func runConn(ctx context.Context, f *fleet, i int, burstStart <-chan struct{}, sem chan struct{}, doneOne func()) {
	counted := false
	defer func() {
		if !counted {
			doneOne()
		}
	}()
	c := &conn{fd: -1, state: stConnecting, sentAt: f.now()} // fd: no raw descriptor here
	d := net.Dialer{Timeout: f.cfg.Timeout}
	name := "local"
	if n := len(f.cfg.Sources); n > 0 {
		c.src = uint16(i % n)
		a := f.cfg.Sources[c.src]
		name = a.String()
		d.LocalAddr = &net.TCPAddr{IP: a.AsSlice()}
	}
	nc, err := d.DialContext(ctx, "tcp", f.remote.String())
	if err != nil {
		if ctx.Err() == nil {
			f.closed(c, name, err, errors.Is(err, syscall.ECONNREFUSED), f.now())
		} else {
			f.inflight.Add(-1)
		}
		return
	}
	defer nc.Close()
	stopClose := context.AfterFunc(ctx, func() { nc.Close() })
	defer stopClose()
	c.state = stHello
	hello := append([]byte(nil), f.hello...)
	buf := make([]byte, 512)
	if err := call(f, c, nc, hello, msgHello, buf); err != nil {
		if ctx.Err() == nil {
			refused := c.flags&fPending != 0 && (err == io.EOF || errors.Is(err, syscall.ECONNRESET))
			f.closed(c, name, err, refused, f.now())
		} else {
			f.inflight.Add(-1)
		}
		return
	}
	period := f.cfg.Heartbeat
	next := f.start.Add(time.Duration(float64(period) * float64(i) / float64(f.cfg.Conns)))
	for next.Before(time.Now()) {
		next = next.Add(period)
	}
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	burst := burstStart
	for {
		select {
		case <-ctx.Done():
			return
		case <-burst:
			burst = nil
			sem <- struct{}{}
			b := append([]byte(nil), f.burst...)
			err = call(f, c, nc, b, msgBurst, buf)
			<-sem
			doneOne()
			counted = true
		case <-t.C:
			next = next.Add(period)
			t.Reset(time.Until(next))
			err = call(f, c, nc, hello, msgBeat, buf)
		}
		if err != nil {
			if ctx.Err() == nil {
				f.closed(c, name, err, false, f.now())
			}
			return
		}
	}
}

// call sends msg (its bytes p, which it patches with the sequence number)
// and reads until its reply is whole.
func call(f *fleet, c *conn, nc net.Conn, p []byte, msg uint8, buf []byte) error {
	c.msg, c.sentAt = msg, f.now()
	c.seq++
	c.flags |= fPending
	if f.cfg.Proto == ProtoSRMP {
		p[1] = c.seq
	} else {
		c.remain = uint32(len(p))
	}
	deadline := time.Now().Add(f.cfg.Timeout)
	nc.SetDeadline(deadline)
	n, err := nc.Write(p)
	c.wOff = uint32(n)
	if err != nil {
		return err
	}
	for c.flags&fPending != 0 {
		n, err := nc.Read(buf)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return errNoReply(f.cfg.Timeout)
			}
			return err
		}
		now := f.now()
		if f.cfg.Proto == ProtoEcho {
			complete, extra := c.feedEcho(buf[:n])
			if extra > 0 {
				f.unexpected.Add(1)
			}
			if complete {
				if ok, why := f.reply(c, false, nil, now); !ok {
					return errors.New(why)
				}
			}
			continue
		}
		var why string
		err = c.feedSRMP(buf[:n], func(kind, seq byte, payload []byte) {
			k := kind & kindMask
			if why != "" || c.flags&fPending == 0 || seq != c.seq || (k != kindReply && k != kindError) {
				f.unexpected.Add(1)
				return
			}
			_, why = f.reply(c, k == kindError, func() string { return errorText(payload) }, now)
		})
		if err != nil {
			return err
		}
		if why != "" {
			return errors.New(why)
		}
	}
	return nil
}
