//go:build !linux

package main

import "context"

// serveGnet fails with errUnsupported: the gnet server runs on Linux only.
func serveGnet(context.Context, config, func(string)) error { return errUnsupported }

// serveNbio fails with errUnsupported: the nbio server runs on Linux only.
func serveNbio(context.Context, config, func(string)) error { return errUnsupported }
