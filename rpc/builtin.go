package rpc

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"
)

// The built-in actions every server answers (NewLife ApiController).
const (
	actionAll  = "Api/All"
	actionInfo = "Api/Info"
)

// builtinAction marks the server's own actions, which Config.Authorize
// does not guard: by this flag, not by name, so an application action
// named Api/… (a controller called ApiController, say) is guarded.
func builtinAction(a *action) { a.builtin = true }

func (s *Server) registerBuiltins() {
	_ = Handle(s, actionAll, func(context.Context, struct{}) ([]string, error) { return s.reg.all(), nil }, builtinAction)
	_ = Handle(s, actionInfo, s.info, builtinAction)
}

// info answers Api/Info with the facts NewLife's ApiController gives.
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
		"State":       state,
		"Uptime":      time.Since(s.started).Round(time.Second).String(),
		"Online":      s.cs.Transport().SessionCount(),
	}
	if ss := SessionFrom(ctx); ss != nil {
		m["Remote"] = ss.RemoteAddr().String()
		if a, ok := ss.conn.Session().LocalAddr().(*net.TCPAddr); ok {
			m["LocalIP"] = a.IP.String()
			m["Port"] = a.Port
		}
		if t := ss.Token(); t != "" {
			m["Token"] = t
		}
	}
	return m, nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "(devel)"
}
