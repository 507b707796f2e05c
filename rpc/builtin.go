package rpc

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"
)

// The built-in actions every server answers (NewLife ApiController).
const (
	actionAll    = "Api/All"
	actionInfo   = "Api/Info"
	actionHealth = "Api/Health"
)

// builtinAction marks the server's own actions, which Config.Authorize
// does not guard: by this flag, not by name, so an application action
// named Api/… (a controller called ApiController, say) is guarded.
func builtinAction(a *action) { a.builtin = true }

func (s *Server) registerBuiltins() {
	_ = Handle(s, actionAll, func(context.Context, struct{}) ([]string, error) { return s.reg.all(), nil }, builtinAction)
	_ = Handle(s, actionInfo, s.info, builtinAction, WithParams("state"))
	_ = Handle(s, actionHealth, s.health, builtinAction, func(a *action) { a.open, a.inline = true, true })
}

// info answers Api/Info with the facts NewLife's ApiController gives:
// the basic ones to anyone (its health check), the server's uptime, port,
// online counts and counters only to a session that holds a token, as
// NewLife's does.
func (s *Server) info(ctx context.Context, state string) (map[string]any, error) {
	host, _ := os.Hostname()
	exe, _ := os.Executable()
	m := map[string]any{
		"Id":          os.Getpid(),
		"Name":        filepath.Base(exe),
		"Title":       "lifenet rpc",
		"FileVersion": version(),
		"OS":          runtime.GOOS + "/" + runtime.GOARCH,
		"MachineName": host,
		"ApiVersion":  runtime.Version(),
		"Time":        time.Now().Format(timeLayout),
	}
	if state != "" {
		m["State"] = state
	}
	ss := SessionFrom(ctx)
	if ss == nil {
		return m, nil
	}
	m["Remote"] = ss.RemoteAddr().String()
	local, _ := ss.LocalAddr().(*net.TCPAddr)
	if local != nil {
		m["LocalIP"] = local.IP.String()
	}
	t := ss.Token()
	if t == "" {
		return m, nil
	}
	st := s.cs.Transport().Stats()
	maps.Copy(m, map[string]any{"Token": t, "Uptime": timeSpan(time.Since(s.started)), "Online": st.Active, "MaxOnline": st.MaxActive,
		"Stat": map[string]any{"Dropped": s.dropped.Load(), "Panics": s.panics.Load()}})
	if local != nil {
		m["Port"] = local.Port
	}
	return m, nil
}

// timeSpan writes d as .NET's TimeSpan.ToString() does ("c":
// [d.]hh:mm:ss[.fffffff]), as NewLife's Uptime reads.
func timeSpan(d time.Duration) string {
	ticks := int64(d / 100) // .NET ticks of 100 ns
	days, rest := ticks/(864e9), ticks%(864e9)
	out := fmt.Sprintf("%02d:%02d:%02d", rest/36e9, rest/6e8%60, rest/1e7%60)
	if days > 0 {
		out = fmt.Sprintf("%d.%s", days, out)
	}
	if frac := rest % 1e7; frac != 0 {
		out += fmt.Sprintf(".%07d", frac)
	}
	return out
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "(devel)"
}

// Health texts: Api/Health's result while serving, and the body of GET
// /healthz.
const (
	healthServing    = "Serving"
	healthNotServing = "NotServing"
)

// SetServing sets what the server reports to health checks: serving (the
// default) or not. A load balancer that asks Api/Health or GET /healthz
// sends no new calls to a server that is not serving; the server still
// answers the calls it gets. An application sets it false to drain before
// it stops, or before Listen until it has warmed up. Shutdown and Close
// set it false for good.
func (s *Server) SetServing(serving bool) { s.notServing.Store(!serving) }

// Serving reports whether the server reports itself serving: not shutting
// down, and not set otherwise with SetServing.
func (s *Server) Serving() bool { return !s.notServing.Load() && !s.closing.Load() }

// health answers Api/Health: "Serving", or ErrNotServing (503). It needs no
// token: Authorize never guards it, even with AuthorizeBuiltins
// (interceptors see it, as every call).
func (s *Server) health(context.Context, struct{}) (string, error) {
	if !s.Serving() {
		return "", ErrNotServing
	}
	return healthServing, nil
}
