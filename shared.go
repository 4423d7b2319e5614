package llmfleet

import (
	"context"
	"errors"
	"time"
)

// ErrStale is wrapped by the error of a Store's RecordCreateFailed with
// requeue for a batch that is no intent any more: another process found
// it by its tag and recorded it created (or it ended), so its requests
// must not be sent again; and by a SharedStore's RecordCreated for a
// batch another live process owns, so that it is not tracked twice.
var ErrStale = errors.New("llmfleet: batch is no intent any more")

// SharedStore is a Store that several llmfleet processes (replicas) use
// at once as one fleet, such as a PostgreSQL database. Each process has
// a lease in it, renewed by Heartbeat; queued requests and batches in
// flight are owned by one process at a time, and pass to another when
// their owner's lease ends. The engine (package dispatch) drives a
// SharedStore through these methods instead of Pending: pools are flushed
// with Claim, so that the requests every replica accepted share a batch,
// and answers reach the replica a caller waits on through Watch.
// Implementations must pass storetest's shared suite.
type SharedStore interface {
	Store
	// Heartbeat renews this process's lease for ttl, measured by the
	// store's clock; ttl 0 ends it (a clean stop: the others adopt what
	// it owns at once). held is false when the lease had ended before
	// this renewal (the process was cut off, or paused, for longer than
	// its lease): what it owned may be another's now, so the process goes
	// on as a new owner, leased for ttl, and what it owned before is left
	// to whichever process adopts it first (this one too, by Adopt). Its
	// writes owning something (AddRequest, Claim, Adopt) are then under
	// the new owner.
	Heartbeat(ctx context.Context, ttl time.Duration) (held bool, err error)
	// Claim records the intent of batch b (owned by this process) and
	// moves into it, in one transaction, the oldest queued requests of
	// pool (StoredRequest.Pool) accepted at or before by (AcceptedAt), at
	// most max of them and, but for the first, at most maxBytes of
	// bodies, skipping those another transaction is claiming. Their
	// custom_ids are b.ID + "-" + their 1-based position. It returns the
	// requests claimed, oldest first; none (and nothing recorded) when the
	// pool has no such request.
	Claim(ctx context.Context, b *StoredBatch, pool string, by time.Time, max int, maxBytes int64) ([]*StoredRequest, error)
	// Adopt makes this process the owner of the batches in state intent
	// or created and of the queued requests (and those submitted without
	// a batch) that no live process owns (their owner's lease ended, or
	// it is an earlier run of this process) and returns them, as Pending
	// does.
	Adopt(ctx context.Context) (queued []*StoredRequest, batches []*PendingBatch, err error)
	// GetRequests returns the stored requests of ids, with their results
	// (as GetRequest), in any order; ids it does not hold are left out.
	// It answers many at once, as Watch announces them.
	GetRequests(ctx context.Context, ids []string) ([]*StoredRequest, error)
	// Watch calls done, from one goroutine, with the ids of requests that
	// any process completed (CompleteRequests), soon after their commit,
	// until ctx ends; it then returns ctx's error. Ids may come more than
	// once, and a lost connection may lose some: a caller also looks
	// now and then.
	Watch(ctx context.Context, done func(ids []string)) error
}
