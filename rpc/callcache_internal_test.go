package rpc

import (
	"runtime"
	"testing"
)

// A session's plain calls of an action share one context, made without
// an allocation while a call holds it; once none does, a collection frees
// the cache's slots and contexts (an idle session keeps none), and the
// next call makes them again.
func TestCallCacheHoldsContextsWeakly(t *testing.T) {
	ss := &Session{}
	a, b := &action{name: "T/A", id: 1}, &action{name: "T/B", id: 2}
	held := ss.calls.get(ss, a, KindUnary)
	if got := ss.calls.get(ss, a, KindUnary); got != held {
		t.Fatal("a second call of the same action made a new context")
	}
	if got := ss.calls.get(ss, a, KindOneWay); got == held {
		t.Fatal("a one-way call shares a unary call's context")
	}
	held = ss.calls.get(ss, a, KindUnary)
	heldB := ss.calls.get(ss, b, KindUnary)
	if n := testing.AllocsPerRun(100, func() { ss.calls.get(ss, a, KindUnary) }); n != 0 {
		t.Fatalf("a cached call context costs %v allocations a call, want 0", n)
	}
	if i := CallInfoFrom(held); i == nil || i.Action() != "T/A" || i.Session() != ss || i.Kind() != KindUnary {
		t.Fatalf("cached context's CallInfo: %+v", i)
	}
	if i := CallInfoFrom(heldB); i == nil || i.Action() != "T/B" {
		t.Fatalf("second action's CallInfo: %+v", i)
	}
	runtime.KeepAlive(held)
	runtime.KeepAlive(heldB)
	runtime.GC()
	runtime.GC()
	if ss.calls.w.Load().Value() != nil {
		t.Fatal("the cache's slots are still held after its contexts were dropped")
	}
	if i := CallInfoFrom(ss.calls.get(ss, a, KindUnary)); i == nil || i.Action() != "T/A" {
		t.Fatalf("a call after the collection: %+v", i)
	}
}
