//go:build !unix

package rpc_test

// ignoreChildExit: no SIGCHLD here.
func ignoreChildExit() {}
