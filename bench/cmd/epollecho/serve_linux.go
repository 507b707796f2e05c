package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// serve deals the connections ln accepts round-robin to loops event
// loops until ln is closed, then stops the loops and closes their
// connections. A loop that fails closes ln, and serve returns its error. A
// connection that cannot join a loop is closed and reported on stderr.
func serve(ln net.Listener, loops int, spin bool) error {
	ls := make([]*loop, 0, loops)
	var wg sync.WaitGroup
	failed := make(chan error, loops)
	defer func() {
		for _, l := range ls {
			l.stop()
		}
		wg.Wait()
		for _, l := range ls {
			l.close()
		}
	}()
	for range loops {
		l, err := newLoop()
		if err != nil {
			return err
		}
		ls = append(ls, l)
		wg.Go(func() {
			if err := l.run(spin); err != nil {
				failed <- err
				ln.Close()
			}
		})
	}
	for i := 0; ; i++ {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			select {
			case err := <-failed:
				return err
			default:
				return nil
			}
		}
		if err != nil {
			return err
		}
		if err := ls[i%loops].add(c.(*net.TCPConn)); err != nil {
			fmt.Fprintf(os.Stderr, "epollecho: a connection from %s not served: %v\n", c.RemoteAddr(), err)
		}
	}
}

// loop is one epoll instance and the sockets it serves. Its wake
// descriptor (an eventfd in the same epoll set) tells run to return.
type loop struct {
	ep, wake int
	mu       sync.Mutex
	fds      map[int]bool // the sockets open in this loop
}

func newLoop() (*loop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	l := &loop{ep: ep, wake: wake, fds: map[int]bool{}}
	if err := l.watch(wake); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

func (l *loop) watch(fd int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

// add moves c's socket into the loop: a non-blocking duplicate of its
// descriptor; c itself is closed.
func (l *loop) add(c *net.TCPConn) error {
	f, err := c.File() // a duplicate, in blocking mode
	c.Close()
	if err != nil {
		return err
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.watch(fd); err != nil {
		unix.Close(fd)
		return err
	}
	l.fds[fd] = true
	return nil
}

// run serves the loop's sockets until stop: level-triggered, so one read
// per event suffices (what is left is reported again), and there is no
// read that finds the socket empty, which the standard library's loop
// makes once per message. A socket whose echo cannot be written at once in
// full (its peer does not read) is closed: this probe keeps no send queue.
// run returns nil when stopped, or epoll_wait's error.
func (l *loop) run(spin bool) error {
	evs := make([]unix.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	for {
		n := 0
		if spin {
			n = pollNow(l.ep, evs)
		}
		if n == 0 {
			var err error
			if n, err = unix.EpollWait(l.ep, evs, -1); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return fmt.Errorf("epoll_wait: %w", err)
			}
		}
		for _, e := range evs[:n] {
			fd := int(e.Fd)
			if fd == l.wake {
				return nil
			}
			if !echo(fd, buf) {
				l.drop(fd)
			}
		}
	}
}

func (l *loop) drop(fd int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, fd, nil)
	unix.Close(fd)
	delete(l.fds, fd)
}

// stop wakes run to return.
func (l *loop) stop() {
	var one [8]byte
	one[0] = 1 // the eventfd counter is a host-order uint64; 1 in any order wakes it
	unix.Write(l.wake, one[:])
}

// close closes the loop's sockets and descriptors, once run has returned.
func (l *loop) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for fd := range l.fds {
		unix.Close(fd)
	}
	l.fds = nil
	unix.Close(l.wake)
	unix.Close(l.ep)
}

// echo reads what fd holds and writes it back; false ends the connection.
func echo(fd int, buf []byte) bool {
	n, err := unix.Read(fd, buf)
	if n <= 0 {
		return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)
	}
	w, err := unix.Write(fd, buf[:n])
	return err == nil && w == n
}

// pollNow is epoll_wait with a zero timeout as a raw system call: it never
// blocks, so it skips the runtime's bookkeeping for a blocking call.
func pollNow(ep int, evs []unix.EpollEvent) int {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if e != 0 {
		return 0
	}
	return int(r)
}
