package transport_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// DefaultConfig spells out the documented defaults; NoDelay stays for each
// side to resolve.
func TestDefaultConfig(t *testing.T) {
	c := transport.DefaultConfig()
	want := transport.Config{
		ReadBufferSize:      transport.DefaultServerReadBuffer,
		MaxSocketSendBuffer: transport.DefaultMaxSocketSend,
		NoDelay:             transport.NoDelayDefault,
		KeepAlive:           transport.DefaultKeepAlive,
		MaxConns:            transport.DefaultMaxConns,
		MaxConnsPerIP:       transport.DefaultMaxConnsPerIP,
		IdleTimeout:         transport.DefaultIdleTimeout,
		FirstByteTimeout:    transport.DefaultFirstByteTimeout,
		HandshakeTimeout:    transport.DefaultHandshakeTimeout,
		ParkAfter:           transport.DefaultParkAfter,
		SendQueueBytes:      transport.DefaultSendQueueBytes,
		SendStallTimeout:    transport.DefaultSendStallTimeout,
		WriteTimeout:        transport.DefaultWriteTimeout,
		UDPPeerIdle:         transport.DefaultUDPPeerIdle,
		MaxUDPPeers:         transport.DefaultMaxUDPPeers,
		UDPReadBatch:        transport.DefaultUDPReadBatch,
	}
	if c != want {
		t.Fatalf("DefaultConfig() =\n%+v\nwant\n%+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	if err := (transport.Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
}

// DefaultClientConfig spells out the documented client defaults.
func TestDefaultClientConfig(t *testing.T) {
	c := transport.DefaultClientConfig()
	conn := transport.DefaultConfig()
	conn.ReadBufferSize = transport.DefaultClientReadBuffer
	if c.Config != conn {
		t.Errorf("DefaultClientConfig().Config =\n%+v\nwant\n%+v", c.Config, conn)
	}
	if c.Mode != transport.ReceiveEvent || c.PullQueue != transport.DefaultPullQueue ||
		c.DialTimeout != transport.DefaultDialTimeout || c.AutoReconnect ||
		c.ReconnectDelay != transport.DefaultReconnectDelay || c.ReconnectMax != transport.DefaultReconnectMax ||
		c.MaxReconnect != transport.DefaultMaxReconnect || c.LocalAddr != "" || c.ReceiveTimeout != 0 {
		t.Errorf("DefaultClientConfig() = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultClientConfig().Validate() = %v", err)
	}
	if err := (transport.ClientConfig{}).Validate(); err != nil {
		t.Fatalf("zero ClientConfig: %v", err)
	}
}

// negativeFields sets each size or count field of a Config negative.
var negativeFields = map[string]func(*transport.Config){
	"ReadBufferSize":      func(c *transport.Config) { c.ReadBufferSize = -1 },
	"SocketReceiveBuffer": func(c *transport.Config) { c.SocketReceiveBuffer = -1 },
	"SocketSendBuffer":    func(c *transport.Config) { c.SocketSendBuffer = -1 },
	"MaxSocketSendBuffer": func(c *transport.Config) { c.MaxSocketSendBuffer = -1 },
	"MaxConns":            func(c *transport.Config) { c.MaxConns = -1 },
	"MaxConnsPerIP":       func(c *transport.Config) { c.MaxConnsPerIP = -1 },
	"SendQueueBytes":      func(c *transport.Config) { c.SendQueueBytes = -1 },
	"MaxUDPPeers":         func(c *transport.Config) { c.MaxUDPPeers = -1 },
	"UDPReadBatch":        func(c *transport.Config) { c.UDPReadBatch = -1 },
}

// Validate names each negative field in an error matching ErrConfig, for a
// Config and for the Config inside a ClientConfig; NewServer and Dial
// refuse such configs the same way.
func TestConfigValidateNegativeFields(t *testing.T) {
	leakcheck.Check(t)
	for name, set := range negativeFields {
		c := transport.DefaultConfig()
		set(&c)
		err := c.Validate()
		if !errors.Is(err, transport.ErrConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate with negative %s = %v, want ErrConfig naming it", name, err)
		}
		if err := (transport.ClientConfig{Config: c}).Validate(); !errors.Is(err, transport.ErrConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("ClientConfig.Validate with negative %s = %v", name, err)
		}
		if srv, err := transport.NewServer(c, transport.Hooks{}); !errors.Is(err, transport.ErrConfig) || srv != nil {
			t.Errorf("NewServer with negative %s = %v", name, err)
		}
		if cl, err := transport.Dial(context.Background(), "tcp", "127.0.0.1:1", transport.ClientConfig{Config: c}, transport.Hooks{}); !errors.Is(err, transport.ErrConfig) || cl != nil {
			t.Errorf("Dial with negative %s = %v", name, err)
		}
	}
}

// Negative timeouts are valid: they disable the timeout.
func TestConfigNegativeTimeoutsValid(t *testing.T) {
	c := transport.Config{KeepAlive: -1, IdleTimeout: -1, FirstByteTimeout: -1, WriteTimeout: -1, UDPPeerIdle: -1}
	if err := c.Validate(); err != nil {
		t.Fatalf("negative timeouts: %v", err)
	}
	if err := (transport.ClientConfig{Config: c, DialTimeout: -1, ReconnectDelay: -1, ReconnectMax: -1}).Validate(); err != nil {
		t.Fatalf("negative client timeouts: %v", err)
	}
}

// Only the defined NoDelay modes are valid.
func TestConfigValidateNoDelay(t *testing.T) {
	leakcheck.Check(t)
	for _, m := range []transport.NoDelay{transport.NoDelayDefault, transport.NoDelayOn, transport.NoDelayOff, transport.NoDelayAuto} {
		if err := (transport.Config{NoDelay: m}).Validate(); err != nil {
			t.Errorf("NoDelay %d: %v", m, err)
		}
	}
	for _, m := range []transport.NoDelay{transport.NoDelayAuto + 1, 255} {
		c := transport.Config{NoDelay: m}
		if err := c.Validate(); !errors.Is(err, transport.ErrConfig) || !strings.Contains(err.Error(), "NoDelay") {
			t.Errorf("NoDelay %d: %v, want ErrConfig naming NoDelay", m, err)
		}
		if _, err := transport.NewServer(c, transport.Hooks{}); !errors.Is(err, transport.ErrConfig) {
			t.Errorf("NewServer with NoDelay %d: %v", m, err)
		}
		if _, err := transport.Dial(context.Background(), "tcp", "127.0.0.1:1", transport.ClientConfig{Config: c}, transport.Hooks{}); !errors.Is(err, transport.ErrConfig) {
			t.Errorf("Dial with NoDelay %d: %v", m, err)
		}
	}
}

// ClientConfig.Validate names negative client fields, and refuses an
// unknown receive mode and ReceiveSync with AutoReconnect; Dial refuses
// them before dialing.
func TestClientConfigValidate(t *testing.T) {
	leakcheck.Check(t)
	for _, tc := range []struct {
		name string
		cfg  transport.ClientConfig
		want string // in the message
	}{
		{"negative PullQueue", transport.ClientConfig{PullQueue: -1}, "PullQueue"},
		{"negative MaxReconnect", transport.ClientConfig{MaxReconnect: -1}, "MaxReconnect"},
		{"negative ReceiveTimeout", transport.ClientConfig{ReceiveTimeout: -1}, "ReceiveTimeout"},
		{"unknown mode", transport.ClientConfig{Mode: transport.ReceiveSync + 1}, "mode"},
		{"sync with reconnect", transport.ClientConfig{Mode: transport.ReceiveSync, AutoReconnect: true}, "ReceiveSync"},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, transport.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want ErrConfig mentioning %q", tc.name, err, tc.want)
		}
		// Nothing listens on port 1: an attempt to dial would fail otherwise.
		if c, err := transport.Dial(context.Background(), "tcp", "127.0.0.1:1", tc.cfg, transport.Hooks{}); !errors.Is(err, transport.ErrConfig) || c != nil {
			t.Errorf("%s: Dial = %v, want ErrConfig", tc.name, err)
		}
	}
	for _, cfg := range []transport.ClientConfig{
		{Mode: transport.ReceivePull, AutoReconnect: true},
		{Mode: transport.ReceiveEvent, AutoReconnect: true},
		{Mode: transport.ReceiveSync, ReceiveTimeout: 1},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}
