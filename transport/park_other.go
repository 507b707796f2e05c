//go:build !linux

package transport

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
)

const parkSupported = false

// poller is Linux's (park_linux.go): elsewhere no session parks.
type poller struct{ parked atomic.Int64 }

func newPoller(*Server) (*poller, error) { return nil, errors.New("transport: no poller on this OS") }

func (p *poller) arm(*Session, int64) bool { return false }
func (p *poller) disarm(*Session)          {}
func (p *poller) release(*Session)         {}
func (p *poller) stop()                    {}

func readNow(syscall.RawConn, []byte) (int, bool, error) { return 0, false, errors.ErrUnsupported }

func parkableConn(net.Conn) bool              { return false }
func rawListener(l net.Listener) net.Listener { return l }
func (s *Session) detachConn(*poller)         {}
