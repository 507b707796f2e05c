package rpctool

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// serverSchemes are the schemes of rpc.Dial's addresses.
var serverSchemes = []string{"tcp", "tls", "udp", "ws", "wss", "http", "https"}

// errNoPort is checkHostPort's error for an address without a port.
var errNoPort = errors.New("no port (want HOST:PORT, e.g. 127.0.0.1:5500)")

// checkHostPort reports what is wrong with hp as a HOST:PORT to dial: no
// port, a port that is not a number from 1 to 65535, no host, or a host
// that is a number (a port given alone, "5500"). A bare IPv6 address
// needs its brackets ([::1]:5500).
func checkHostPort(hp string) error {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		if isDigits(hp) {
			return fmt.Errorf("a port alone (want HOST:PORT, e.g. 127.0.0.1:%s)", hp)
		}
		var ae *net.AddrError
		if errors.As(err, &ae) && ae.Err == "missing port in address" {
			return errNoPort
		}
		return fmt.Errorf("not HOST:PORT (%v)", err)
	}
	return checkHostAndPort(host, port, false)
}

// checkHostAndPort checks an address's host and port. A URL's (url is
// true: ws, http…) must have a host and may leave the port to the
// scheme's default; a socket address's (host:port) must have a port and
// may leave the host empty, which net.Dial takes for this machine.
func checkHostAndPort(host, port string, url bool) error {
	switch {
	case host == "" && url:
		return errors.New("no host (want HOST:PORT, e.g. 127.0.0.1:5500)")
	case isDigits(host):
		return fmt.Errorf("host %q is a number: a port alone? (want HOST:PORT, e.g. 127.0.0.1:5500)", host)
	case port == "" && url:
		return nil
	case port == "":
		return errNoPort
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// checkServers checks list, what rpc.Dial dials (addresses joined by
// commas, each [SCHEME://]HOST:PORT[/PATH], no scheme meaning tcp), more
// strictly than Dial, so that a malformed address is a usage error naming
// it and what is wrong ("5500": a port alone) rather than a server Dial
// finds unreachable. what names the address on the command line (ADDR,
// --remote). With tcpOnly, an address must be tcp:// or have no scheme.
func checkServers(what, list string, tcpOnly bool) error {
	n := 0
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		n++
		if err := checkServer(a, tcpOnly); err != nil {
			return fmt.Errorf("%s %q: %w", what, a, err)
		}
	}
	if n == 0 {
		return fmt.Errorf("%s %q: no server address (want HOST:PORT, e.g. 127.0.0.1:5500)", what, list)
	}
	return nil
}

// checkServer checks one of checkServers's addresses.
func checkServer(a string, tcpOnly bool) error {
	scheme, rest, ok := strings.Cut(a, "://")
	if !ok { // tcp, as rpc.Dial reads it; a path is ignored there too
		hp, _, _ := strings.Cut(a, "/")
		return checkHostPort(hp)
	}
	switch {
	case tcpOnly && scheme != "tcp":
		return fmt.Errorf("scheme %q: want tcp:// or none (HOST:PORT)", scheme)
	case !slices.Contains(serverSchemes, scheme):
		return fmt.Errorf("unsupported server address scheme %q (want %s)", scheme, strings.Join(serverSchemes, ", "))
	case scheme == "tcp" || scheme == "tls" || scheme == "udp":
		hp, _, _ := strings.Cut(rest, "/")
		return checkHostPort(hp)
	}
	u, err := url.Parse(a)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("not a URL (%v)", err)
	}
	return checkHostAndPort(u.Hostname(), u.Port(), true)
}
