package postgres

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

// This file is the DB's part in a fleet of replicas (llmfleet.SharedStore):
// leases, claiming a pool, adopting what a dead replica owned, and the
// completions announced with NOTIFY.

var _ llmfleet.SharedStore = (*DB)(nil)

// randomName returns 8 random hex digits.
func randomName() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// channel returns the NOTIFY channel of a schema's completions (an
// identifier of at most 63 bytes whatever the schema's name).
func channel(schema string) string {
	h := sha256.Sum256([]byte(schema))
	return "llmfleet_done_" + hex.EncodeToString(h[:8])
}

// register records a new run of a replica: the earlier runs of its name
// are over (Open holds the name's lock), so their lease ends now, and
// this one's starts.
func register(ctx context.Context, db *sql.DB, name, token string, lease time.Duration) error {
	_, err := db.ExecContext(ctx, `WITH ended AS (
			UPDATE replicas SET lease_until = clock_timestamp() WHERE name = $1 AND lease_until > clock_timestamp())
		INSERT INTO replicas (id, name, started_at, lease_until)
		VALUES ($2, $1, clock_timestamp(), clock_timestamp() + make_interval(secs => $3))`,
		name, token, lease.Seconds())
	if err != nil {
		return fmt.Errorf("postgres: registering replica %s: %w", name, err)
	}
	return nil
}

// Heartbeat renews this run's lease for ttl, by the server's clock (0
// ends it). held is false when it had ended before: what the run owned
// may have been adopted by another replica meanwhile, so this process
// goes on as a new run of its name (a new owner token, leased for ttl),
// leaving the ended run's batches and queued requests to whichever
// replica adopts them first, this one included (Adopt).
func (d *DB) Heartbeat(ctx context.Context, ttl time.Duration) (held bool, err error) {
	token := d.run()
	fresh := ""
	err = d.write(ctx, func(tx *sql.Tx) error {
		fresh = ""
		var until, now time.Time
		err := tx.QueryRowContext(ctx, `SELECT lease_until, clock_timestamp() FROM replicas WHERE id = $1 FOR UPDATE`, token).Scan(&until, &now)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Forgotten (a day after its lease ended): a new run.
		case err != nil:
			return err
		case until.After(now) || ttl == 0:
			held = true
			_, err = tx.ExecContext(ctx, `UPDATE replicas SET lease_until = clock_timestamp() + make_interval(secs => $2) WHERE id = $1`,
				token, ttl.Seconds())
			return err
		}
		name, _, _ := strings.Cut(token, "/")
		fresh = name + "/" + randomName()
		_, err = tx.ExecContext(ctx, `INSERT INTO replicas (id, name, started_at, lease_until)
			VALUES ($1, $2, clock_timestamp(), clock_timestamp() + make_interval(secs => $3))`, fresh, name, ttl.Seconds())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: renewing the lease: %w", err)
	}
	if fresh != "" {
		d.mu.Lock()
		if d.token == token {
			d.token = fresh
		}
		d.mu.Unlock()
	}
	return held, nil
}

// run returns the owner token of this process's current run.
func (d *DB) run() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.token
}

// Adopt makes this run the owner of the batches in flight and the queued
// requests no live replica owns, and returns them as Pending does: those
// of runs whose lease ended (found in the small replicas table, then by
// owner through an index, so that a look costs little however many
// requests wait) and those of no run (stored before replicas had
// owners). Two replicas adopting at once adopt each row once: the update
// of a row waits for the other's, then finds its owner alive. A run is
// forgotten a day after its lease ended, once it owns nothing.
func (d *DB) Adopt(ctx context.Context) (queued []*llmfleet.StoredRequest, batches []*llmfleet.PendingBatch, err error) {
	token := d.run()
	err = d.write(ctx, func(tx *sql.Tx) error {
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
	token := d.run()
	err := d.write(ctx, func(tx *sql.Tx) error {
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

// maxPayload bounds a NOTIFY payload (the server's limit is 8000 bytes).
const maxPayload = 7000

// notifyDone announces, at the commit of tx, the requests it completed.
func (d *DB) notifyDone(ctx context.Context, tx *sql.Tx, ids []string) error {
	for len(ids) > 0 {
		n, size := 0, 0
		for n < len(ids) && (n == 0 || size+len(ids[n])+1 <= maxPayload) {
			size += len(ids[n]) + 1
			n++
		}
		if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, d.notify, strings.Join(ids[:n], ",")); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// Watch listens for the completions of every replica on a connection of
// its own and calls done with their ids, until ctx ends. A lost
// connection is opened again after a second (what completed meanwhile is
// not announced again).
func (d *DB) Watch(ctx context.Context, done func(ids []string)) error {
	for {
		err := d.listen(ctx, done)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_ = err
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// listen runs one LISTEN session until it fails or ctx ends.
func (d *DB) listen(ctx context.Context, done func(ids []string)) error {
	conn, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{d.notify}.Sanitize()); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload != "" {
			done(strings.Split(n.Payload, ","))
		}
	}
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

// endLease ends this run's lease, so that the others adopt what it still
// owns at once.
func endLease(db *sql.DB, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	db.ExecContext(ctx, `UPDATE replicas SET lease_until = clock_timestamp() WHERE id = $1`, token)
}

// FleetStart returns when the fleet's earliest replica run still
// registered started (runs are forgotten a day after their lease ended):
// the start of the figures every replica shows alike.
func (d *DB) FleetStart(ctx context.Context) (time.Time, error) {
	db, err := d.conn()
	if err != nil {
		return time.Time{}, err
	}
	var at sql.NullTime
	if err := db.QueryRowContext(ctx, `SELECT min(started_at) FROM replicas`).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("postgres: the fleet's start: %w", err)
	}
	return at.Time, nil
}

// GetRequests returns the requests of ids it holds, with their results,
// in one query.
func (d *DB) GetRequests(ctx context.Context, ids []string) ([]*llmfleet.StoredRequest, error) {
	db, err := d.conn()
	if err != nil {
		return nil, err
	}
	out, err := storecodec.QueryRequests(ctx, db, `SELECT `+storecodec.RequestColumns+` FROM requests WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: requests: %w", err)
	}
	return out, nil
}
