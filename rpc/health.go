package rpc

import "context"

// actionHealth is the built-in health action.
const actionHealth = "Api/Health"

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
