// Package cliflag is what the lifenet commands share on their command
// lines: the exit codes, one phrasing for a value out of range ("want
// between 1 and 4096"), and a flag set whose help names the command's
// arguments and whose errors are one line on stderr.
package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// The exit codes of every lifenet command.
const (
	ExitOK    = 0 // done
	ExitFail  = 1 // the run failed, found a fault, or was interrupted
	ExitUsage = 2 // a bad command line
)

type number interface {
	~int | ~int64 | ~uint64 | ~float64
}

// Between reports a flag value outside [lo, hi] (NaN included) as
// "--name v: want between lo and hi", and returns nil for one inside.
// Durations print as durations (1ms, 1h0m0s).
func Between[T number](name string, v, lo, hi T) error {
	if v >= lo && v <= hi {
		return nil
	}
	return fmt.Errorf("--%s %v: want between %v and %v", name, v, lo, hi)
}

// First returns the first error that is not nil, or nil.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Check returns an error with the message when ok is false.
func Check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// Command is a lifenet command's flag set: `lifenet <Name> [flags] <Args>`.
type Command struct {
	*flag.FlagSet
	Synopsis string // the arguments after the flags, e.g. "ADDR ACTION [key=value … | JSON]"; "" for none
	About    string // one or more lines printed under the usage line
}

// New returns the command `lifenet name` taking args after its flags
// ("" for none) and described by about.
func New(name, args, about string) *Command {
	fs := flag.NewFlagSet("lifenet "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Command{FlagSet: fs, Synopsis: args, About: about}
}

// Usage prints the usage line, the description and the flags with their
// defaults.
func (c *Command) Usage(w io.Writer) {
	line := "usage: " + c.Name() + " [flags]"
	if c.Synopsis != "" {
		line += " " + c.Synopsis
	}
	fmt.Fprintln(w, line)
	if c.About != "" {
		fmt.Fprintln(w, c.About)
	}
	n := 0
	c.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	PrintDefaults(w, c.FlagSet)
}

// PrintDefaults prints fs's flags and their defaults to w as
// flag.PrintDefaults does, each flag named with two dashes (--port), as
// the help texts and error messages write them; the flag package accepts
// both. fs's output is left as it was.
func PrintDefaults(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	io.WriteString(w, Dashes(b.String()))
}

// Dashes rewrites the flag lines of flag.PrintDefaults's output,
// "  -name…", to "  --name…". The usage lines under them start with a
// tab and are left alone.
func Dashes(defaults string) string {
	var b strings.Builder
	for line := range strings.Lines(defaults) {
		if rest, ok := strings.CutPrefix(line, "  -"); ok && rest != "" && rest[0] != '-' && rest[0] != ' ' {
			line = "  --" + rest
		}
		b.WriteString(line)
	}
	return b.String()
}

// Parse parses args. done says the command is to exit with code: after
// -h, -help or --help (the usage on stdout, ExitOK), or after a flag error
// or, for a command without a Synopsis, an argument (one line on stderr,
// ExitUsage).
func (c *Command) Parse(args []string, stdout, stderr io.Writer) (code int, done bool) {
	err := c.FlagSet.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.Usage(stdout)
		return ExitOK, true
	}
	if err == nil && c.Synopsis == "" && c.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", c.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name(), err)
		return ExitUsage, true
	}
	return ExitOK, false
}

// Set reports which flags the command line set.
func (c *Command) Set() map[string]bool {
	set := map[string]bool{}
	c.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// UsageError reports a bad command line in one line on stderr, "lifenet
// cmd: …" (of several joined errors the first), and returns ExitUsage.
func UsageError(stderr io.Writer, cmd string, err error) int {
	first := err
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		first = j.Unwrap()[0]
	}
	fmt.Fprintf(stderr, "lifenet %s: %v\n", cmd, first)
	return ExitUsage
}
