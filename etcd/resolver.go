package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ResolverConfig holds a resolver's settings. The zero value means "all
// defaults"; a zero field takes the default named on it.
type ResolverConfig struct {
	// Prefix is the root of the key layout (default DefaultPrefix); it
	// must end with '/'.
	Prefix string
	// Debounce is how long the resolver gathers the changes that follow
	// one it sees before it reports the new set (default DefaultDebounce,
	// 100 ms; negative: report each change at once). A burst of
	// registrations, as when a fleet starts, then costs one update.
	Debounce time.Duration
	// Timeout bounds each list of the service's keys (default
	// DefaultResolverTimeout, 5 s).
	Timeout time.Duration
	// RetryMin and RetryMax bound the wait between attempts to list again
	// after a list or a watch fails: RetryMin (default DefaultRetryMin)
	// doubles after each failure up to RetryMax (default Timeout), with
	// jitter. A compaction is re-listed at once.
	RetryMin, RetryMax time.Duration
	// Logger, if set, gets a line for each failure, each re-list and each
	// value that is skipped because it is not a valid endpoint.
	Logger *slog.Logger
}

// DefaultResolverConfig returns a ResolverConfig with every default filled
// in.
func DefaultResolverConfig() ResolverConfig {
	c := ResolverConfig{}
	c.fill()
	return c
}

func (c *ResolverConfig) fill() {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Debounce == 0 {
		c.Debounce = DefaultDebounce
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultResolverTimeout
	}
	if c.RetryMin == 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = max(c.Timeout, c.RetryMin)
	}
}

// Validate reports the first setting out of range. Zero fields are valid.
func (c ResolverConfig) Validate() error {
	if err := validatePrefix(c.Prefix); err != nil {
		return err
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: Timeout %v < 0", ErrConfig, c.Timeout)
	}
	return validateRetry(c.RetryMin, c.RetryMax)
}

// Resolver is an [rpc.Resolver] that finds the endpoints of one service
// in etcd, under ServicePrefix(cfg.Prefix, service).
type Resolver struct {
	cli     *clientv3.Client
	cfg     ResolverConfig
	log     *slog.Logger
	service string
	prefix  string
}

var _ rpc.Resolver = (*Resolver)(nil)

// NewResolver returns a resolver of service's endpoints through cli. It
// sends nothing to etcd until Watch.
func NewResolver(cli *clientv3.Client, service string, cfg ResolverConfig) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := validateService(service); err != nil {
		return nil, err
	}
	if cli == nil {
		return nil, fmt.Errorf("%w: nil client", ErrConfig)
	}
	cfg.fill()
	return &Resolver{
		cli:     cli,
		cfg:     cfg,
		log:     logger(cfg.Logger).With("service", service),
		service: service,
		prefix:  ServicePrefix(cfg.Prefix, service),
	}, nil
}

// Watch implements [rpc.Resolver]. It lists the service's keys, reports
// the set, then watches the keys from the revision after the list and
// reports each change (gathered for cfg.Debounce). When the watch fails,
// or etcd has compacted away the revisions it needs, Watch lists again and
// reports the difference, if any. While etcd cannot be reached nothing is
// reported: the last set stands, and only keys deleted in etcd (by
// Close, or by their lease's expiry) ever remove an endpoint. Values that
// are not the JSON of an rpc.Endpoint with a valid Addr
// ([rpc.Endpoint.Validate]) are skipped, with a log line (once per key and
// value). Endpoints come sorted by key, so by Addr.
//
// Watch returns ctx's error when ctx ends, or an error when the client is
// closed or etcd refuses the list for good (permission denied,
// unauthenticated, invalid argument).
func (r *Resolver) Watch(ctx context.Context, update func([]rpc.Endpoint)) error {
	w := watch{r: r, update: update}
	attempt := 0
	for {
		set, rev, err := r.list(ctx, &w)
		listed := err == nil
		if listed {
			w.emit(set)
			start := time.Now()
			var progressed bool
			progressed, err = w.run(ctx, set, rev)
			if progressed || time.Since(start) > r.cfg.RetryMax {
				attempt = 0
			}
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case r.cli.Ctx().Err() != nil:
			return fmt.Errorf("etcd: resolver of %s: client closed: %w", r.service, r.cli.Ctx().Err())
		case errors.Is(err, rpctypes.ErrCompacted):
			r.log.Info("etcd: watch compacted, listing again", "err", err)
			continue
		case givesUp(err, listed):
			return fmt.Errorf("etcd: resolver of %s: %w", r.service, err)
		}
		d := backoff(r.cfg.RetryMin, r.cfg.RetryMax, attempt)
		attempt++
		r.log.Warn("etcd: resolver cut off, keeping the last set", "err", err, "retry_in", d, "endpoints", len(w.last))
		if !sleep(ctx, d) {
			return ctx.Err()
		}
	}
}

// givesUp reports whether Watch ends on err: a list refused for good. A
// watch's error never ends it, permanent or not: etcd refuses a watcher
// added to a stream whose token is stale (Unauthenticated, or
// InvalidArgument "revision of auth store is old", after an operator
// changed a user or a role), which a new list and watch mend; one that
// retrying does not mend fails the list that follows.
func givesUp(err error, listed bool) bool { return !listed && permanent(err) }

// list reads the service's keys and the revision they were read at.
func (r *Resolver) list(ctx context.Context, w *watch) (map[string]rpc.Endpoint, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	resp, err := r.cli.Get(ctx, r.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	set := make(map[string]rpc.Endpoint, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		w.apply(set, kv)
	}
	return set, resp.Header.Revision, nil
}

// apply puts kv's endpoint in set, or takes its key out if the value is
// not a valid endpoint: not the JSON of an rpc.Endpoint, or one whose
// Addr a client cannot dial (rpc.Endpoint.Validate: empty, longer than
// rpc.MaxEndpointAddr, a scheme it has not, no host or port). A key is
// logged once for each invalid value it takes, not at each list.
func (w *watch) apply(set map[string]rpc.Endpoint, kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	var ep rpc.Endpoint
	err := json.Unmarshal(kv.Value, &ep)
	if err == nil {
		err = ep.Validate()
	}
	if err != nil {
		h := fnv.New64a()
		h.Write(kv.Value)
		if sum := h.Sum64(); w.skipped[key] != sum {
			if w.skipped == nil || len(w.skipped) >= maxSkipMemo {
				w.skipped = map[string]uint64{}
			}
			w.skipped[key] = sum
			w.r.log.Warn("etcd: skipping a value that is not an endpoint", "key", clip(key), "err", clip(err.Error()))
		}
		delete(set, key)
		return
	}
	delete(w.skipped, key)
	set[key] = ep
}

// maxSkipMemo bounds the invalid keys a watch remembers having logged.
const maxSkipMemo = 1 << 16

// clip cuts s to 256 bytes for a log line.
func clip(s string) string {
	if len(s) <= 256 {
		return s
	}
	return s[:256] + "…"
}

// watch is the state of one Watch call.
type watch struct {
	r        *Resolver
	update   func([]rpc.Endpoint)
	last     []rpc.Endpoint // the set last reported
	reported bool
	skipped  map[string]uint64 // invalid keys logged, with a hash of the value logged
}

// emit reports set unless it equals the last one reported.
func (w *watch) emit(set map[string]rpc.Endpoint) {
	keys := slices.Sorted(maps.Keys(set))
	eps := make([]rpc.Endpoint, len(keys))
	for i, k := range keys {
		eps[i] = set[k]
	}
	if w.reported && slices.EqualFunc(eps, w.last, equalEndpoint) {
		return
	}
	w.last, w.reported = eps, true
	out := make([]rpc.Endpoint, len(eps))
	for i, ep := range eps {
		ep.Meta = maps.Clone(ep.Meta)
		out[i] = ep
	}
	w.update(out)
}

func equalEndpoint(a, b rpc.Endpoint) bool {
	return a.Addr == b.Addr && a.Weight == b.Weight && a.Zone == b.Zone &&
		a.Version == b.Version && maps.Equal(a.Meta, b.Meta)
}

// run watches the service's keys from rev+1, applying events to set and
// reporting it, until the watch ends. It reports whether the watch
// delivered anything, and returns the watch's error.
func (w *watch) run(ctx context.Context, set map[string]rpc.Endpoint, rev int64) (progressed bool, err error) {
	r := w.r
	// WithRequireLeader: a member cut off from its cluster ends the watch
	// (to be re-listed elsewhere) instead of keeping it silently stale.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := r.cli.Watch(wctx, r.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))

	var (
		timer   *time.Timer
		timerC  <-chan time.Time
		pending bool
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if pending && ctx.Err() == nil {
			w.emit(set) // the changes seen are real, whatever ended the watch
		}
	}()
	for {
		select {
		case resp, ok := <-wch:
			if !ok {
				return progressed, errors.New("etcd: watch closed")
			}
			if err := resp.Err(); err != nil {
				return progressed, err
			}
			progressed = true
			for _, ev := range resp.Events {
				switch ev.Type {
				case clientv3.EventTypePut:
					w.apply(set, ev.Kv)
				case clientv3.EventTypeDelete:
					delete(set, string(ev.Kv.Key))
				}
			}
			if len(resp.Events) == 0 {
				continue
			}
			if r.cfg.Debounce < 0 {
				w.emit(set)
				continue
			}
			if !pending {
				pending = true
				if timer == nil {
					timer = time.NewTimer(r.cfg.Debounce)
				} else {
					timer.Reset(r.cfg.Debounce)
				}
				timerC = timer.C
			}
		case <-timerC:
			pending, timerC = false, nil
			w.emit(set)
		case <-ctx.Done():
			return progressed, ctx.Err()
		}
	}
}
