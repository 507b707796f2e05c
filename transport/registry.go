package transport

// sessionSet is a server's open sessions. The list is always kept: Close,
// Shutdown, [Stats], Range and Broadcast must reach every session. The index
// by ID behind [Server.Session] is the optional part (Config.NoSessionRegistry
// drops it). The owning server's mu guards both.
type sessionSet struct {
	list []*Session          // in no order; each session knows its slot
	byID map[uint64]*Session // nil when the registry is off
}

func newSessionSet(index bool) sessionSet {
	var set sessionSet
	if index {
		set.byID = make(map[uint64]*Session)
	}
	return set
}

func (set *sessionSet) len() int { return len(set.list) }

func (set *sessionSet) add(s *Session) {
	s.slot = int32(len(set.list)) // (a process holds far fewer than 2³¹ sessions: each has a descriptor or a UDP peer's slot)
	set.list = append(set.list, s)
	if set.byID != nil {
		set.byID[s.id] = s
	}
}

// remove takes s out in constant time by moving the last session into its
// slot. Removing a session that is not in the set does nothing.
func (set *sessionSet) remove(s *Session) {
	if s.slot < 0 || int(s.slot) >= len(set.list) || set.list[s.slot] != s {
		return
	}
	last := len(set.list) - 1
	set.list[s.slot] = set.list[last]
	set.list[s.slot].slot = s.slot
	set.list[last] = nil
	set.list = set.list[:last]
	s.slot = -1
	if set.byID != nil {
		delete(set.byID, s.id)
	}
	if cap(set.list) > 1024 && len(set.list) < cap(set.list)/4 {
		set.list = append([]*Session(nil), set.list...) // give back a burst's memory
	}
}

// lookup finds a session by ID; it finds nothing when the registry is off.
func (set *sessionSet) lookup(id uint64) (*Session, bool) {
	s, ok := set.byID[id]
	return s, ok
}

// copyList returns the sessions as a new slice, to walk without the lock.
func (set *sessionSet) copyList() []*Session {
	return append([]*Session(nil), set.list...)
}
