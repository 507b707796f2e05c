package rpctool

import (
	"fmt"
	"strings"

	"github.com/lifenet/lifenet/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdScheme starts the address of a service whose servers are registered
// in etcd: etcd://HOST:PORT/SERVICE.
const etcdScheme = "etcd://"

// etcdSynopsis is how usage lines and errors spell an etcd address.
const etcdSynopsis = "etcd://HOST:PORT/SERVICE"

// etcdService is a service in etcd: the etcd members to ask and the
// service's name, whose endpoints are under
// etcd.ServicePrefix("", service).
type etcdService struct {
	members []string // host:port of each etcd member
	service string
}

// isEtcd reports whether addr names a service in etcd.
func isEtcd(addr string) bool { return strings.HasPrefix(addr, etcdScheme) }

// parseEtcd parses etcd://HOST:PORT[,HOST:PORT…]/SERVICE.
func parseEtcd(addr string) (etcdService, error) {
	rest, ok := strings.CutPrefix(addr, etcdScheme)
	if !ok {
		return etcdService{}, fmt.Errorf("%q: want %s", addr, etcdSynopsis)
	}
	hosts, service, ok := strings.Cut(rest, "/")
	switch {
	case !ok || service == "":
		return etcdService{}, fmt.Errorf("%q: no SERVICE (want %s)", addr, etcdSynopsis)
	case strings.ContainsAny(service, "/?#"):
		return etcdService{}, fmt.Errorf("%q: the SERVICE %q may not contain '/', '?' or '#' (want %s)", addr, service, etcdSynopsis)
	}
	s := etcdService{service: service}
	for h := range strings.SplitSeq(hosts, ",") {
		if err := checkHostPort(h); err != nil {
			return etcdService{}, fmt.Errorf("%q: etcd member %q is not HOST:PORT: %v (want %s, members joined by commas)", addr, h, err, etcdSynopsis)
		}
		s.members = append(s.members, h)
	}
	return s, nil
}

// String is the address as etcd://HOST:PORT/SERVICE.
func (s etcdService) String() string {
	return etcdScheme + strings.Join(s.members, ",") + "/" + s.service
}

// prefix is the etcd prefix of the service's keys.
func (s etcdService) prefix() string { return etcd.ServicePrefix("", s.service) }

// client returns a client of s's etcd members with the etcd module's
// settings (etcd.ClientConfig), logging nothing: failures reach the
// command's user through the registration's and the resolver's errors.
func (s etcdService) client() (*clientv3.Client, error) {
	cfg := etcd.ClientConfig(s.members...)
	cfg.Logger = zap.NewNop()
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", strings.Join(s.members, ","), err)
	}
	return cli, nil
}
