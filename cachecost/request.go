package cachecost

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

// Entry is what is known of the cache entries of one prefix: when the
// sync cache's and the batch cache's expire (zero: none known).
type Entry struct {
	SyncUntil, BatchUntil time.Time
}

// alive returns whether each cache holds the entry at t.
func (e Entry) alive(t time.Time) (syncCache, batchCache bool) {
	return e.SyncUntil.After(t), e.BatchUntil.After(t)
}

// Point is a prefix of a request's prompt that its cache lookup may read:
// a breakpoint, or an earlier prefix the lookup looks back to (an earlier
// turn's breakpoint), as the cost model reads it.
type Point struct {
	// Hash names the prefix.
	Hash string
	// Tokens is the prefix's size (learned from usage, else estimated).
	Tokens int64
	// TTL is the time to live its cache_control asks for; 0 for an
	// earlier prefix, which this request does not write.
	TTL time.Duration
	// Cache is what is known of its entries.
	Cache Entry
	// Presumed tells that its batch cache entry is presumed, not known
	// (see Book.Presume).
	Presumed bool
}

// written reports whether a lookup that misses writes the point: a
// breakpoint's prefix is written, an earlier prefix is not.
func (p Point) written() bool { return p.TTL > 0 }

// Request is what the cost model reads of a request.
type Request struct {
	// Points are its prompt's breakpoints, and the earlier prefixes known
	// to have been cached, in prompt order (growing); the last is its
	// last breakpoint.
	Points []Point
	// Tokens is its whole input; Output its expected output.
	Tokens, Output int64
}

// Option is one way of sending a request.
type Option struct {
	// Route is the route.
	Route llmfleet.Route
	// TTL1h upgrades every breakpoint's TTL to an hour (a batch's wait
	// can outlast 5 minutes).
	TTL1h bool
	// At is when the prompt is expected to reach the provider's cache:
	// now for a sync or flex call, after the pool's wait and a typical
	// turnaround for a batch.
	At time.Time
	// Late is the probability that a batch comes too late and the request
	// is rescued: a sync call, paid on top (Rescue is its bill).
	Late   float64
	Rescue float64
}
