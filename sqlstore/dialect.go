package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Dialect is what a SQL store does differently from the core: how its
// statements are written, and the writes of many rows, which SQLite makes
// one prepared statement a row and PostgreSQL one statement over arrays.
// The hooks run within the core's transactions (tx) and return their
// errors unwrapped; the core wraps them. Name, Insert, Submit, Lock,
// SaveResults, AddLedger and PurgePrefixes are required.
type Dialect struct {
	// Name names the store in its errors ("sqlite: …").
	Name string
	// Numbered has the core's statements written with numbered
	// placeholders ($1, $2, …) rather than ?.
	Numbered bool
	// ByteOrder follows each text column an ORDER BY sorts by, so that
	// it sorts byte by byte: ` COLLATE "C"` on PostgreSQL, whose default
	// collation follows the locale; empty on SQLite, whose default is
	// byte order.
	ByteOrder string
	// Snapshot begins the read transaction of Pending; nil means the
	// database's default (on SQLite in WAL mode, a snapshot already).
	Snapshot *sql.TxOptions

	// Workers is how many groups of AddRequest calls are inserted at
	// once; 0 means 1.
	Workers int
	// MaxGroup is the most calls one group holds; 0 means 512.
	MaxGroup int
	// Insert inserts the rows of a group in one transaction, under ctx,
	// and returns each row's own outcome (nil: inserted;
	// llmfleet.ErrExists: its id was taken) or, in err, the failure of
	// the transaction, which stored none of them (a row's own error then
	// stands).
	Insert func(ctx context.Context, rows []Row) (errs []error, err error)
	// Canceled, if set, reports whether an error of Insert is the
	// server's answer to an insert canceled by its ctx, which stored
	// nothing. With it, a group's insert is canceled as soon as the
	// context of one of its calls ends, and the others are inserted
	// again. Without it, ctx is never canceled: the insert runs to its
	// end, and a caller whose context ended meanwhile gets its outcome.
	Canceled func(err error) bool
	// Committed, if set, is asked, after an Insert that failed (its
	// connection lost, say), whether it committed nonetheless: it returns
	// each row's outcome as Insert would have, or nil if the insert did
	// not commit or it cannot tell.
	Committed func(rows []Row) []error

	// Submit moves into batchID those of the requests of ids that are
	// queued, each with its custom_id (customIDs, in the order of ids),
	// and returns how many it moved.
	Submit func(ctx context.Context, tx *sql.Tx, batchID string, ids, customIDs []string) (int64, error)
	// Lock returns, of the requests of ids, those that exist and whether
	// each is done, and keeps their rows from changing until tx ends.
	Lock func(ctx context.Context, tx *sql.Tx, ids []string) (done map[string]bool, err error)
	// SaveResults stores results, their requests moving to done.
	SaveResults func(ctx context.Context, tx *sql.Tx, results []Result) error
	// Completed, if set, is called with the ids of the requests a
	// CompleteRequests completed, once their results are saved.
	Completed func(ctx context.Context, tx *sql.Tx, ids []string) error
	// AddLedger writes ledger entries, as given; none is a no-op.
	AddLedger func(ctx context.Context, tx *sql.Tx, entries []llmfleet.LedgerEntry) error

	// Owner, if set, returns the owner that RecordCreateFailed gives the
	// requests it puts back in the queue (a SharedStore's current run).
	Owner func() string
	// PurgePrefixes is the statement of Purge that deletes the prefixes
	// last seen before its one argument, or never seen, written as the
	// core's are (with ?).
	PurgePrefixes string
	// Purge, if set, deletes what else Purge must, given the ledger's
	// cutoff (Unix nanoseconds), and returns how many records it deleted.
	Purge func(ctx context.Context, tx *sql.Tx, ledgerCut int64) (int64, error)
}

// Row is a request AddRequest inserts: the request as the caller gave
// it, its header encoded (storecodec.EncodeHeader) and the state it is
// stored in (storecodec.AddedState).
type Row struct {
	Request *llmfleet.StoredRequest
	Header  []byte
	State   llmfleet.RequestState
}

// Result is a request's result as CompleteRequests saves it, its columns
// encoded (storecodec.ResultColumns, storecodec.EncodeUsage).
type Result struct {
	ID          string
	Status      int
	Body, Err   []byte
	Usage       []byte
	CompletedAt time.Time
	BatchID     string
}

// missing returns the names of the required hooks d lacks.
func (d *Dialect) missing() []string {
	var out []string
	for name, set := range map[string]bool{
		"Name": d.Name != "", "Insert": d.Insert != nil, "Submit": d.Submit != nil, "Lock": d.Lock != nil,
		"SaveResults": d.SaveResults != nil, "AddLedger": d.AddLedger != nil, "PurgePrefixes": d.PurgePrefixes != "",
	} {
		if !set {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
