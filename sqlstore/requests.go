package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

// Store is the llmfleet.Store methods the SQL stores share, over a Conn.
// A store embeds the Store that NewStore returns; the zero Store's
// methods return ErrClosed. The owners of pass-through objects are a
// type of their own (Owners), embedded.
type Store struct {
	c *Conn
	Owners
}

// NewStore returns the shared methods over c.
func NewStore(c *Conn) Store { return Store{c: c, Owners: Owners{c: c}} }

// AddRequest records a request accepted for batching (State queued), or
// one sent sync at once (State submitted, no BatchID), and returns once
// it is committed. Concurrent calls are committed together, in groups
// (see the package's doc). An id stored already is refused with an error
// wrapping llmfleet.ErrExists. When AddRequest returns an error, the
// request is not stored; it returns its context's error soon after the
// context ends.
func (s Store) AddRequest(ctx context.Context, r *llmfleet.StoredRequest) error {
	if err := s.c.Err(); err != nil {
		return err
	}
	if r == nil || r.ID == "" {
		return s.c.errorf("request without an id")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	h, err := storecodec.EncodeHeader(r.Header)
	if err != nil {
		return s.c.errorf("request %s header: %w", r.ID, err)
	}
	err = s.c.adds.add(ctx, Row{Request: r, Header: h, State: storecodec.AddedState(r)})
	if errors.Is(err, ErrClosed) {
		return s.c.Err()
	}
	return err
}

// GetRequest returns one request, with its result if it has one, or an
// error wrapping llmfleet.ErrNotFound.
func (s Store) GetRequest(ctx context.Context, id string) (*llmfleet.StoredRequest, error) {
	db, err := s.c.Reader()
	if err != nil {
		return nil, err
	}
	r, err := storecodec.ScanRequest(db.QueryRowContext(ctx, s.c.sql(`SELECT `+storecodec.RequestColumns+` FROM requests WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.c.errorf("request %s: %w", id, llmfleet.ErrNotFound)
	}
	return r, err
}

// completion is a completion to store: its result encoded, its ledger
// entry, and its index in the call's list.
type completion struct {
	result Result
	ledger *llmfleet.LedgerEntry
	at     int
}

// CompleteRequests stores the results of requests (State done) and their
// ledger entries, in one transaction, in the order given. A request done
// already, by an earlier call, another process or earlier in this one,
// keeps its first result and gets no ledger entry from this call. The
// rows are locked first (Dialect.Lock), then their results saved at once
// (Dialect.SaveResults). An unknown id, with an error wrapping
// llmfleet.ErrNotFound, or a nil result fails the whole call, storing
// nothing. A ledger entry is stored as given, its RequestID included.
func (s Store) CompleteRequests(ctx context.Context, done []llmfleet.Completion) ([]bool, error) {
	if len(done) == 0 {
		return nil, nil
	}
	first, ids, err := s.completions(done)
	if err != nil {
		return nil, err
	}
	var kept []bool
	err = s.c.Write(ctx, func(tx *sql.Tx) error {
		kept = make([]bool, len(done))
		wasDone, err := s.c.d.Lock(ctx, tx, ids)
		if err != nil {
			return s.c.errorf("locking %d requests: %w", len(ids), err)
		}
		var (
			results []Result
			entries []llmfleet.LedgerEntry
		)
		for _, c := range first {
			isDone, ok := wasDone[c.result.ID]
			if !ok {
				return s.c.errorf("request %s: %w", c.result.ID, llmfleet.ErrNotFound)
			}
			if isDone {
				continue // its first result and entry stand
			}
			kept[c.at] = true
			results = append(results, c.result)
			if c.ledger != nil {
				entries = append(entries, *c.ledger)
			}
		}
		return s.save(ctx, tx, results, entries)
	})
	if err != nil {
		return nil, err
	}
	return kept, nil
}

// completions encodes the first completion of each request of done, and
// returns them with their ids.
func (s Store) completions(done []llmfleet.Completion) ([]completion, []string, error) {
	first := make([]completion, 0, len(done))
	ids := make([]string, 0, len(done))
	seen := make(map[string]bool, len(done))
	for i, c := range done {
		if c.Result == nil {
			return nil, nil, s.c.errorf("request %s: nil result", c.RequestID)
		}
		if seen[c.RequestID] { // a later completion of the same request loses
			continue
		}
		seen[c.RequestID] = true
		status, body, errJSON, err := storecodec.ResultColumns(c.Result)
		if err != nil {
			return nil, nil, s.c.errorf("request %s: %w", c.RequestID, err)
		}
		usage, err := storecodec.EncodeUsage(c.Result.Usage)
		if err != nil {
			return nil, nil, s.c.errorf("request %s usage: %w", c.RequestID, err)
		}
		first = append(first, completion{at: i, ledger: c.Ledger, result: Result{ID: c.RequestID, Status: status,
			Body: body, Err: errJSON, Usage: usage, CompletedAt: c.Result.CompletedAt, BatchID: c.Result.BatchID}})
		ids = append(ids, c.RequestID)
	}
	return first, ids, nil
}

// save saves results and ledger entries within tx, and tells the Dialect
// which requests were completed.
func (s Store) save(ctx context.Context, tx *sql.Tx, results []Result, entries []llmfleet.LedgerEntry) error {
	if len(results) == 0 {
		return nil
	}
	if err := s.c.d.SaveResults(ctx, tx, results); err != nil {
		return s.c.errorf("completing %d requests: %w", len(results), err)
	}
	if err := s.addLedger(ctx, tx, entries); err != nil {
		return err
	}
	if s.c.d.Completed == nil {
		return nil
	}
	ids := make([]string, len(results))
	for i, r := range results {
		ids[i] = r.ID
	}
	return s.c.d.Completed(ctx, tx, ids)
}

// AddLedger records ledger entries, as given, in one transaction.
func (s Store) AddLedger(ctx context.Context, entries []llmfleet.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return s.c.Write(ctx, func(tx *sql.Tx) error { return s.addLedger(ctx, tx, entries) })
}

// addLedger writes entries within tx, and adds what they cost to their
// clients' spend (spend.go).
func (s Store) addLedger(ctx context.Context, tx *sql.Tx, entries []llmfleet.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := s.c.d.AddLedger(ctx, tx, entries); err != nil {
		return s.c.errorf("ledger: %w", err)
	}
	return s.addSpend(ctx, tx, entries)
}
