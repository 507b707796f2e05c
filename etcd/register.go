package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// RegisterConfig holds a registration's settings. The zero value means
// "all defaults"; a zero field takes the default named on it.
type RegisterConfig struct {
	// Prefix is the root of the key layout (default DefaultPrefix); it
	// must end with '/'. Servers and clients of one service must agree.
	Prefix string
	// TTL is the lease's time to live (default DefaultTTL, 15 s): how long
	// the endpoint stays listed after its server stops keeping it alive
	// (killed, partitioned from etcd). etcd counts whole seconds: a
	// fraction is rounded up, and etcd may grant more than asked (its
	// minimum is 1.5 election timeouts).
	TTL time.Duration
	// Timeout bounds each request to etcd (default TTL/3, at least 1 s).
	Timeout time.Duration
	// RetryMin and RetryMax bound the wait between attempts to register
	// again after the lease is lost: RetryMin (default DefaultRetryMin)
	// doubles after each failure up to RetryMax (default TTL/3), with
	// jitter. Attempts go on until Close or the client closes.
	RetryMin, RetryMax time.Duration
	// Logger, if set, gets a line for each state change and each failed
	// attempt.
	Logger *slog.Logger
	// OnState, if set, is called on each state change: StateRegistered
	// (first at Register, then after each renewal), StateLost with the
	// cause, StateClosed with Close's error. Calls are never concurrent;
	// those after Register returns come from the registration's goroutine,
	// so OnState must not block for long nor call Close.
	OnState func(s State, err error)
}

// DefaultRegisterConfig returns a RegisterConfig with every default
// filled in.
func DefaultRegisterConfig() RegisterConfig {
	c := RegisterConfig{}
	c.fill()
	return c
}

func (c *RegisterConfig) fill() {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	c.TTL = time.Duration(ttlSeconds(c.TTL)) * time.Second
	if c.Timeout == 0 {
		c.Timeout = max(c.TTL/3, time.Second)
	}
	if c.RetryMin == 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = max(c.TTL/3, c.RetryMin)
	}
}

func ttlSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Validate reports the first setting out of range. Zero fields are valid.
func (c RegisterConfig) Validate() error {
	if err := validatePrefix(c.Prefix); err != nil {
		return err
	}
	switch {
	case c.TTL < 0:
		return fmt.Errorf("%w: TTL %v < 0", ErrConfig, c.TTL)
	case c.TTL > 0 && c.TTL < time.Second:
		return fmt.Errorf("%w: TTL %v < 1s (etcd leases count whole seconds)", ErrConfig, c.TTL)
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout %v < 0", ErrConfig, c.Timeout)
	}
	return validateRetry(c.RetryMin, c.RetryMax)
}

// State is a registration's state, as [RegisterConfig.OnState] reports it.
type State int

const (
	// StateRegistered: the endpoint's key is written under a live lease
	// that the registration keeps alive.
	StateRegistered State = iota + 1
	// StateLost: the lease was lost (revoked, expired, or its keep-alives
	// went unanswered for a TTL, as while etcd is down); the registration
	// is renewing it, retrying with backoff.
	StateLost
	// StateClosed: Close ran; the key is deleted and the lease revoked
	// (or, if etcd could not be reached, they expire within the TTL).
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateRegistered:
		return "registered"
	case StateLost:
		return "lost"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ErrLeaseLost is the cause StateLost reports when the lease's keep-alive
// ends: etcd answered that the lease is gone, or did not answer for a TTL.
var ErrLeaseLost = errors.New("etcd: lease lost")

// Registration is one endpoint registered in etcd, kept alive by a
// goroutine of its own until Close (or until its client closes).
type Registration struct {
	cli     *clientv3.Client
	cfg     RegisterConfig
	log     *slog.Logger
	service string
	key     string
	val     string
	ttl     int64

	mu     sync.Mutex
	lease  clientv3.LeaseID // the lease the key was last written under; 0: none
	closed bool

	cancel context.CancelFunc
	done   chan struct{} // closed when keep returns
}

// Register writes ep under Key(cfg.Prefix, service, ep.Addr) as JSON,
// attached to a new lease of cfg.TTL, and keeps the lease alive from a
// goroutine of its own. When the lease is lost (etcd restarted and dropped
// it, it expired during a partition, someone revoked it) the registration
// writes the key again, under the old lease if etcd still has it, else
// under a new one, retrying with backoff until it succeeds.
//
// Register returns once the key is written: it retries with backoff until
// then, and returns the last error once ctx ends (or at once for an error
// that no retry mends: permission denied, unauthenticated, invalid
// argument). ctx bounds only this
// first registration; the registration lives on until Close. A server
// registers after it listens and calls Close at the start of its Shutdown,
// so that clients stop choosing it before it stops serving.
func Register(ctx context.Context, cli *clientv3.Client, service string, ep rpc.Endpoint, cfg RegisterConfig) (*Registration, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := validateService(service); err != nil {
		return nil, err
	}
	if cli == nil {
		return nil, fmt.Errorf("%w: nil client", ErrConfig)
	}
	if ep.Addr == "" {
		return nil, fmt.Errorf("%w: endpoint without Addr", ErrConfig)
	}
	cfg.fill()
	val, err := json.Marshal(ep)
	if err != nil {
		return nil, fmt.Errorf("etcd: register %s: %w", ep.Addr, err)
	}
	r := &Registration{
		cli:     cli,
		cfg:     cfg,
		log:     logger(cfg.Logger).With("service", service, "addr", ep.Addr),
		service: service,
		key:     Key(cfg.Prefix, service, ep.Addr),
		val:     string(val),
		ttl:     ttlSeconds(cfg.TTL),
		done:    make(chan struct{}),
	}
	for attempt := 0; ; attempt++ {
		err = r.renew(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil || cli.Ctx().Err() != nil || permanent(err) {
			r.revokeQuietly()
			return nil, fmt.Errorf("etcd: register %s: %w", r.key, err)
		}
		r.log.Warn("etcd: register failed, retrying", "err", err)
		if !sleep(ctx, backoff(cfg.RetryMin, cfg.RetryMax, attempt)) {
			r.revokeQuietly()
			return nil, fmt.Errorf("etcd: register %s: %w (after %v)", r.key, ctx.Err(), err)
		}
	}
	r.report(StateRegistered, nil)
	kctx, cancel := context.WithCancel(cli.Ctx())
	r.cancel = cancel
	go r.keep(kctx)
	return r, nil
}

// Key returns the etcd key the endpoint is registered under.
func (r *Registration) Key() string { return r.key }

// Lease returns the lease the key was last written under (0 after Close).
func (r *Registration) Lease() clientv3.LeaseID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// Close stops keeping the registration alive, then deletes its key (if it
// is still under the registration's lease) and revokes the lease, within
// ctx. If etcd cannot be reached it returns the error, and the key goes
// when the lease expires, within the TTL. Only the first call does
// anything; later ones return nil.
func (r *Registration) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	<-r.done

	r.mu.Lock()
	lease := r.lease
	r.lease = 0
	r.mu.Unlock()
	var err error
	if lease != 0 {
		_, err = r.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.LeaseValue(r.key), "=", lease)).
			Then(clientv3.OpDelete(r.key)).
			Commit()
		if _, rerr := r.cli.Revoke(ctx, lease); rerr != nil && !errors.Is(rerr, rpctypes.ErrLeaseNotFound) && err == nil {
			err = rerr
		}
	}
	if err != nil {
		err = fmt.Errorf("etcd: deregister %s: %w", r.key, err)
	}
	r.report(StateClosed, err)
	return err
}

// keep runs until ctx ends: it keeps the lease alive and, when the lease
// is lost, renews the registration.
func (r *Registration) keep(ctx context.Context) {
	defer close(r.done)
	for {
		err := r.keepAlive(ctx)
		if ctx.Err() != nil {
			if r.cli.Ctx().Err() != nil && !r.isClosed() {
				r.report(StateLost, fmt.Errorf("%w: client closed", ErrLeaseLost))
			}
			return
		}
		r.report(StateLost, err)
		for attempt := 0; ; attempt++ {
			err := r.renew(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			r.log.Warn("etcd: register again failed, retrying", "err", err, "attempt", attempt+1)
			if !sleep(ctx, backoff(r.cfg.RetryMin, r.cfg.RetryMax, attempt)) {
				return
			}
		}
		r.report(StateRegistered, nil)
	}
}

func (r *Registration) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// keepAlive keeps the current lease alive until its keep-alive channel
// closes (the lease is gone, or went a TTL without an answer) or ctx ends.
func (r *Registration) keepAlive(ctx context.Context) error {
	lease := r.Lease()
	ch, err := r.cli.KeepAlive(ctx, lease)
	if err != nil {
		return fmt.Errorf("%w: keep-alive of lease %x: %w", ErrLeaseLost, int64(lease), err)
	}
	for range ch {
	}
	return fmt.Errorf("%w: keep-alive of lease %x ended", ErrLeaseLost, int64(lease))
}

// renew writes the key under the current lease if etcd still has it (it
// outlives a keep-alive cut short while etcd was down, since etcd extends
// every lease when it elects a leader), else under a new lease.
func (r *Registration) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if lease := r.Lease(); lease != 0 {
		_, err := r.cli.KeepAliveOnce(ctx, lease)
		if err == nil {
			err = r.put(ctx, lease)
		}
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return err
		}
	}
	g, err := r.cli.Grant(ctx, r.ttl)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.lease = g.ID
	r.mu.Unlock()
	return r.put(ctx, g.ID)
}

// put writes the key under lease unless it is already there with that
// lease and value, so that a renewal under the same lease sends the
// resolvers no event.
func (r *Registration) put(ctx context.Context, lease clientv3.LeaseID) error {
	_, err := r.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(r.key), "=", lease),
			clientv3.Compare(clientv3.Value(r.key), "=", r.val)).
		Else(clientv3.OpPut(r.key, r.val, clientv3.WithLease(lease))).
		Commit()
	return err
}

// revokeQuietly revokes a lease granted by a Register that then failed.
func (r *Registration) revokeQuietly() {
	lease := r.Lease()
	if lease == 0 || r.cli.Ctx().Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	r.cli.Revoke(ctx, lease) //nolint:errcheck // it expires within the TTL anyway
}

func (r *Registration) report(s State, err error) {
	if err != nil {
		r.log.Warn("etcd: registration "+s.String(), "key", r.key, "err", err)
	} else {
		r.log.Info("etcd: registration "+s.String(), "key", r.key)
	}
	if r.cfg.OnState != nil {
		r.cfg.OnState(s, err)
	}
}

// permanent reports whether err is one that retrying does not mend.
func permanent(err error) bool {
	var code codes.Code
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	} else {
		code = status.Code(err)
	}
	switch code {
	case codes.PermissionDenied, codes.Unauthenticated, codes.InvalidArgument:
		return true
	}
	return false
}
