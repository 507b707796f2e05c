package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// buildTime is the build's time when the build sets it:
// go build -ldflags "-X main.buildTime=$(date -u +%FT%TZ)". Go records
// the commit's time, not the build's.
var buildTime string

// version describes the binary from its build information: the module
// version ("(devel)" for a build from a work tree, e.g. go run), the VCS
// commit with "+dirty" for uncommitted changes and its time, the build
// time if set, and the Go version, platform included.
func version(bi *debug.BuildInfo, ok bool) string {
	mod, commit, at, dirty := "(devel)", "(unknown)", "", false
	if ok {
		if v := bi.Main.Version; v != "" {
			mod = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty {
		commit += "+dirty"
	}
	if at != "" {
		commit += " (" + at + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lifenet %s\ncommit  %s\n", mod, commit)
	if buildTime != "" {
		fmt.Fprintf(&b, "built   %s\n", buildTime)
	}
	goVersion := runtime.Version()
	if ok && bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	fmt.Fprintf(&b, "go      %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
