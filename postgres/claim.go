package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlstore"
	"github.com/llmfleet/llmfleet/storecodec"
)

// This file is how replicas share the work: Claim takes a pool's queued
// requests into a batch of this run's, Adopt what runs whose lease ended
// owned, GetRequests reads what others completed.

// Adopt makes this run the owner of the batches in flight and the queued
// requests no live replica owns, and returns them as Pending does: those
// of runs whose lease ended (found in the small replicas table, then by
// owner through an index, so that a look costs little however many
// requests wait) and those of no run (stored before replicas had
// owners). Two replicas adopting at once adopt each row once: the update
// of a row waits for the other's, then finds its owner alive. A run is
// forgotten a day after its lease ended, once it owns nothing.
func (d *DB) Adopt(ctx context.Context) (queued []*llmfleet.StoredRequest, batches []*llmfleet.PendingBatch, err error) {
	token := d.run.current()
	err = d.conn.Write(ctx, func(tx *sql.Tx) error {
		queued, batches = nil, nil
		dead := []string{""}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM replicas WHERE lease_until <= clock_timestamp() AND id <> $1`, token)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			dead = append(dead, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// Re-checked per row: a run that renewed its lease meanwhile keeps
		// what it owns.
		const stillDead = ` AND NOT EXISTS (SELECT 1 FROM replicas p WHERE p.id = t.owner AND p.lease_until > clock_timestamp())`
		batches, err = storecodec.QueryBatches(ctx, tx, `UPDATE batches t SET owner = $1
			WHERE state IN ('intent', 'created') AND owner = ANY($2)`+stillDead+`
			RETURNING `+storecodec.BatchColumns, token, dead)
		if err != nil {
			return err
		}
		for _, pb := range batches {
			pb.Requests, err = storecodec.QueryRequests(ctx, tx, `UPDATE requests SET owner = $2
				WHERE batch_id = $1 AND state = 'submitted' RETURNING `+storecodec.RequestColumns, pb.Batch.ID, token)
			if err != nil {
				return err
			}
			if err := sqlstore.ReadAnswered(ctx, d.conn, tx, pb); err != nil {
				return err
			}
			sortRequests(pb.Requests)
		}
		queued, err = storecodec.QueryRequests(ctx, tx, `UPDATE requests t SET owner = $1
			WHERE (state = 'queued' OR (state = 'submitted' AND batch_id IS NULL)) AND owner = ANY($2)`+stillDead+`
			RETURNING `+storecodec.RequestColumns, token, dead)
		if err != nil {
			return err
		}
		sortRequests(queued)
		_, err = tx.ExecContext(ctx, `DELETE FROM replicas p WHERE lease_until < clock_timestamp() - interval '1 day'
			AND NOT EXISTS (SELECT 1 FROM requests r WHERE r.owner = p.id AND r.state = 'queued')
			AND NOT EXISTS (SELECT 1 FROM requests r WHERE r.owner = p.id AND r.state = 'submitted' AND r.batch_id IS NULL)
			AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.owner = p.id AND b.state IN ('intent', 'created'))`)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: adopting: %w", err)
	}
	sortBatches(batches)
	return queued, batches, nil
}

// Claim records batch b's intent, owned by this run, and moves into it the
// oldest queued requests of pool accepted at or before by (zero: any)
// that fit: at most max, and within
// maxBytes (each counted as its body and 96 bytes of envelope) but for
// the first. Rows another transaction has locked (claiming them) are
// skipped.
func (d *DB) Claim(ctx context.Context, b *llmfleet.StoredBatch, pool string, by time.Time, max int, maxBytes int64) ([]*llmfleet.StoredRequest, error) {
	if b == nil || b.ID == "" {
		return nil, fmt.Errorf("postgres: batch without an id")
	}
	cutoff := int64(math.MaxInt64)
	if !by.IsZero() {
		cutoff = by.UnixNano()
	}
	var out []*llmfleet.StoredRequest
	token := d.run.current()
	err := d.conn.Write(ctx, func(tx *sql.Tx) error {
		out = nil
		rows, err := tx.QueryContext(ctx, `SELECT id, octet_length(body) FROM requests
			WHERE pool = $1 AND state = 'queued' AND accepted_at <= $3
			ORDER BY accepted_at, id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED`, pool, max, cutoff)
		if err != nil {
			return err
		}
		var ids []string
		var total int64
		for rows.Next() {
			var id string
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return err
			}
			if len(ids) > 0 && total+n+96 > maxBytes {
				break
			}
			ids, total = append(ids, id), total+n+96
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO batches (id, provider, credential_id, state, size,
			intent_at, create_deadline, owner) VALUES ($1, $2, $3, 'intent', $4, $5, $6, $7)`,
			b.ID, b.Provider, b.CredentialID, len(ids), storecodec.Nanos(b.IntentAt), storecodec.Nanos(b.CreateDeadline), token); err != nil {
			return fmt.Errorf("recording batch %s: %w", b.ID, err)
		}
		out, err = storecodec.QueryRequests(ctx, tx, `UPDATE requests r SET state = 'submitted', batch_id = $1,
			custom_id = $1 || '-' || c.n, owner = $2
			FROM unnest($3::text[]) WITH ORDINALITY AS c(id, n) WHERE r.id = c.id
			RETURNING `+prefixed("r.", storecodec.RequestColumns), b.ID, token, ids)
		sortRequests(out)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claiming pool for batch %s: %w", b.ID, err)
	}
	return out, nil
}

// prefixed qualifies each column of a comma-separated list.
func prefixed(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// GetRequests returns the requests of ids it holds, with their results,
// in one query.
func (d *DB) GetRequests(ctx context.Context, ids []string) ([]*llmfleet.StoredRequest, error) {
	db, err := d.conn.Reader()
	if err != nil {
		return nil, err
	}
	out, err := storecodec.QueryRequests(ctx, db, `SELECT `+storecodec.RequestColumns+` FROM requests WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: requests: %w", err)
	}
	return out, nil
}

// sortRequests orders requests by acceptance, then id.
func sortRequests(rs []*llmfleet.StoredRequest) {
	slices.SortFunc(rs, func(a, b *llmfleet.StoredRequest) int {
		return cmp.Or(a.AcceptedAt.Compare(b.AcceptedAt), strings.Compare(a.ID, b.ID))
	})
}

// sortBatches orders batches by intent, then id.
func sortBatches(bs []*llmfleet.PendingBatch) {
	slices.SortFunc(bs, func(a, b *llmfleet.PendingBatch) int {
		return cmp.Or(a.Batch.IntentAt.Compare(b.Batch.IntentAt), strings.Compare(a.Batch.ID, b.Batch.ID))
	})
}
