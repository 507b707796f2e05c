package transport

import "slices"

// sessionSet is a server's open sessions, in the order of their IDs: Close,
// Shutdown, [Stats], Range and Broadcast walk it, and [Server.Session]
// finds a session in it by binary search (Config.NoSessionRegistry turns
// that lookup off). A session's entry keeps its ID, so a removed one
// leaves a hole (a nil session) that still sorts; the holes are squeezed
// out once they are a quarter of the list. An entry is 16 bytes, where a
// map by ID beside a list took 30 to 45 a session. The owning server's mu
// guards it.
type sessionSet struct {
	list  []sessionEntry
	holes int  // entries whose session was removed
	index bool // lookup finds sessions (the registry is on)
}

// sessionEntry is a session in a sessionSet, with its ID; s is nil once
// it was removed.
type sessionEntry struct {
	id uint64
	s  *Session
}

// compactAbove is the fewest entries a list squeezes its holes out of:
// below it the holes cost less than the walks over them.
const compactAbove = 64

func newSessionSet(index bool) sessionSet { return sessionSet{index: index} }

func (set *sessionSet) len() int { return len(set.list) - set.holes }

// add puts s in the set. A server gives IDs in order under the lock that
// guards the set, so s goes at the end; one that does not sorts in.
func (set *sessionSet) add(s *Session) {
	n := len(set.list)
	if n == 0 || set.list[n-1].id < s.id {
		set.list = append(set.list, sessionEntry{s.id, s})
		return
	}
	i, _ := set.search(s.id)
	set.list = slices.Insert(set.list, i, sessionEntry{s.id, s})
}

// remove takes s out, leaving a hole, in the time of a binary search but
// for the squeeze of the holes a quarter of removals pays for. Removing a
// session that is not in the set does nothing.
func (set *sessionSet) remove(s *Session) {
	i, ok := set.search(s.id)
	if !ok || set.list[i].s != s {
		return
	}
	set.list[i].s = nil
	set.holes++
	for n := len(set.list); n > 0 && set.list[n-1].s == nil; n-- { // the newest leave no hole behind
		set.list = set.list[:n-1]
		set.holes--
	}
	if len(set.list) >= compactAbove && set.holes > len(set.list)/4 {
		set.compact()
	}
}

// compact squeezes the holes out, and gives back the memory of a list
// that has shrunk to a quarter of its room.
func (set *sessionSet) compact() {
	kept := set.list[:0]
	for _, e := range set.list {
		if e.s != nil {
			kept = append(kept, e)
		}
	}
	clear(set.list[len(kept):])
	set.list, set.holes = kept, 0
	if cap(set.list) > 1024 && len(set.list) < cap(set.list)/4 {
		set.list = slices.Clip(slices.Clone(set.list))
	}
}

// search returns the index of the entry with ID id, or where it would go,
// and whether it is there (as a live session or a hole).
func (set *sessionSet) search(id uint64) (int, bool) {
	return slices.BinarySearchFunc(set.list, id, func(e sessionEntry, id uint64) int {
		switch {
		case e.id < id:
			return -1
		case e.id > id:
			return 1
		}
		return 0
	})
}

// lookup finds a session by ID; it finds nothing when the registry is off.
func (set *sessionSet) lookup(id uint64) (*Session, bool) {
	if !set.index {
		return nil, false
	}
	if i, ok := set.search(id); ok && set.list[i].s != nil {
		return set.list[i].s, true
	}
	return nil, false
}

// all calls f with each session, in the order of their IDs.
func (set *sessionSet) all(f func(*Session)) {
	for _, e := range set.list {
		if e.s != nil {
			f(e.s)
		}
	}
}

// copyList returns the sessions as a new slice, to walk without the lock.
func (set *sessionSet) copyList() []*Session {
	out := make([]*Session, 0, set.len())
	set.all(func(s *Session) { out = append(out, s) })
	return out
}
