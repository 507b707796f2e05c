// Package logtest records log lines for tests: a slog.Handler that keeps
// every record at or above a level, with its attributes by key.
package logtest

import (
	"context"
	"log/slog"
	"sync"
)

// Record is one line a [Recorder] kept.
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]slog.Value // by key; a group's keys are prefixed "group."
}

// Has reports whether the record has an attribute of every key given.
func (r Record) Has(keys ...string) bool {
	for _, k := range keys {
		if _, ok := r.Attrs[k]; !ok {
			return false
		}
	}
	return true
}

// Recorder keeps the records of the loggers made by [New]. Safe for
// concurrent use.
type Recorder struct {
	level   slog.Level
	mu      sync.Mutex
	records []Record
}

// New returns a recorder of the lines at level and above, and a logger
// writing to it.
func New(level slog.Level) (*Recorder, *slog.Logger) {
	r := &Recorder{level: level}
	return r, slog.New(&handler{r: r})
}

// Records returns the records kept so far, oldest first.
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.records...)
}

// Find returns the records at level with message msg.
func (r *Recorder) Find(level slog.Level, msg string) []Record {
	var out []Record
	for _, rec := range r.Records() {
		if rec.Level == level && rec.Message == msg {
			out = append(out, rec)
		}
	}
	return out
}

type handler struct {
	r      *Recorder
	attrs  []slog.Attr
	prefix string
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.r.level }

func (h *handler) Handle(_ context.Context, rec slog.Record) error {
	out := Record{Level: rec.Level, Message: rec.Message, Attrs: make(map[string]slog.Value)}
	for _, a := range h.attrs {
		out.Attrs[a.Key] = a.Value.Resolve()
	}
	rec.Attrs(func(a slog.Attr) bool {
		out.Attrs[h.prefix+a.Key] = a.Value.Resolve()
		return true
	})
	h.r.mu.Lock()
	h.r.records = append(h.r.records, out)
	h.r.mu.Unlock()
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &handler{r: h.r, prefix: h.prefix, attrs: append([]slog.Attr(nil), h.attrs...)}
	for _, a := range as {
		n.attrs = append(n.attrs, slog.Attr{Key: h.prefix + a.Key, Value: a.Value})
	}
	return n
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{r: h.r, attrs: h.attrs, prefix: h.prefix + name + "."}
}
