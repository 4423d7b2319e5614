package proxy

import "sync"

// unrecorded holds the objects answers named whose owners could not be
// recorded (the store failing), by id, at most maxUnrecorded of them.
type unrecorded struct {
	mu sync.Mutex
	m  map[string]string
}

// maxUnrecorded bounds unrecorded: past it, a failed record is only
// logged.
const maxUnrecorded = 100_000

func (u *unrecorded) keep(id, client string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]string{}
	}
	if _, ok := u.m[id]; !ok && len(u.m) < maxUnrecorded {
		u.m[id] = client
	}
}

func (u *unrecorded) owner(id string) string {
	if u == nil {
		return ""
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[id]
}

func (u *unrecorded) done(id string) {
	u.mu.Lock()
	delete(u.m, id)
	u.mu.Unlock()
}
