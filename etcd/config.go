package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"
)

// DefaultPrefix is the root of the key layout: a service's endpoints live
// under DefaultPrefix + service + "/".
const DefaultPrefix = "/lifenet/services/"

// Defaults of the zero fields of [RegisterConfig] and [ResolverConfig].
const (
	// DefaultTTL is the lease TTL of a registration: the longest a killed
	// server stays listed. 15 s is in the range etcd registries use
	// (Kitex and go-zero 10 s, rpcx 10–30 s, grpc-go's examples 15 s).
	DefaultTTL = 15 * time.Second
	// DefaultRetryMin is the first wait after a failed etcd request; each
	// further failure doubles the wait, up to the config's RetryMax.
	DefaultRetryMin = 200 * time.Millisecond
	// DefaultDebounce is how long a resolver gathers changes after the
	// first of a burst before it reports the new set.
	DefaultDebounce = 100 * time.Millisecond
	// DefaultResolverTimeout bounds each list a resolver sends to etcd;
	// it is also the default RetryMax of a resolver.
	DefaultResolverTimeout = 5 * time.Second
)

// ErrConfig is wrapped by every Validate error of this package, and by
// Register and NewResolver when given an invalid service name or endpoint.
var ErrConfig = errors.New("etcd: invalid config")

// Key returns the key an endpoint of service is registered under:
// prefix + service + "/" + addr ("" for prefix means DefaultPrefix).
func Key(prefix, service, addr string) string {
	return ServicePrefix(prefix, service) + addr
}

// ServicePrefix returns the prefix under which every endpoint of service
// is registered: prefix + service + "/" ("" for prefix means
// DefaultPrefix).
func ServicePrefix(prefix, service string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + service + "/"
}

func validateService(service string) error {
	switch {
	case service == "":
		return fmt.Errorf("%w: empty service name", ErrConfig)
	case strings.Contains(service, "/"):
		// "a" would list the keys of "a/b" as its own.
		return fmt.Errorf("%w: service name %q contains '/'", ErrConfig, service)
	}
	return nil
}

func validatePrefix(prefix string) error {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("%w: Prefix %q does not end with '/'", ErrConfig, prefix)
	}
	return nil
}

func validateRetry(lo, hi time.Duration) error {
	switch {
	case lo < 0:
		return fmt.Errorf("%w: RetryMin %v < 0", ErrConfig, lo)
	case hi < 0:
		return fmt.Errorf("%w: RetryMax %v < 0", ErrConfig, hi)
	case hi > 0 && lo > hi:
		return fmt.Errorf("%w: RetryMin %v > RetryMax %v", ErrConfig, lo, hi)
	}
	return nil
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// backoff is the wait before retry number attempt (0 for the first): lo
// doubled attempt times, at most hi, with "equal jitter" (half fixed, half
// random) so that servers cut off together do not retry together.
func backoff(lo, hi time.Duration, attempt int) time.Duration {
	d := lo
	for i := 0; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
