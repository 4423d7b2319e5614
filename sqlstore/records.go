package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/llmfleet/llmfleet"
)

// PutCredential stores a sealed credential under its fingerprint; it is a
// no-op if one is stored already. The store never sees the secret:
// sealing is the caller's (see package vault).
func (s Store) PutCredential(ctx context.Context, credentialID string, sealed []byte) error {
	if credentialID == "" || len(sealed) == 0 {
		return s.c.errorf("credential without an id or sealed bytes")
	}
	return s.c.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.c.sql(`INSERT INTO credentials (id, sealed) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`),
			credentialID, sealed)
		return err
	})
}

// GetCredential returns a sealed credential, or an error wrapping
// llmfleet.ErrNotFound.
func (s Store) GetCredential(ctx context.Context, credentialID string) ([]byte, error) {
	var sealed []byte
	err := lookup(ctx, s.c, `SELECT sealed FROM credentials WHERE id = ?`, credentialID, &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.c.errorf("credential %s: %w", credentialID, llmfleet.ErrNotFound)
	}
	return sealed, err
}

// lookup reads one value by key into dest, over c.
func lookup(ctx context.Context, c *Conn, query, key string, dest any) error {
	db, err := c.Reader()
	if err != nil {
		return err
	}
	return db.QueryRowContext(ctx, c.sql(query), key).Scan(dest)
}

// AddTurnarounds records observed batch turnarounds, one row each, in one
// transaction.
func (s Store) AddTurnarounds(ctx context.Context, samples []llmfleet.TurnaroundSample) error {
	if len(samples) == 0 {
		return nil
	}
	return s.c.Write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, s.c.sql(`INSERT INTO turnarounds (provider, model, size, turnaround, at)
			VALUES (?, ?, ?, ?, ?)`))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, t := range samples {
			if _, err := stmt.ExecContext(ctx, t.Provider, t.Model, t.Size, int64(t.Turnaround), t.At.UnixNano()); err != nil {
				return s.c.errorf("turnaround: %w", err)
			}
		}
		return nil
	})
}

// CacheStats returns the prompt-cache counts kept, one per provider,
// model, credential, lookup and entry, in that order (byte order).
func (s Store) CacheStats(ctx context.Context) ([]llmfleet.CacheStat, error) {
	db, err := s.c.Reader()
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT provider, model, credential_id, lookup, entry, lookups, hits FROM cache_stats
		ORDER BY `+s.c.byteOrder("provider", "model", "credential_id", "lookup", "entry"))
	if err != nil {
		return nil, s.c.errorf("cache stats: %w", err)
	}
	defer rows.Close()
	var out []llmfleet.CacheStat
	for rows.Next() {
		var st llmfleet.CacheStat
		if err := rows.Scan(&st.Provider, &st.Model, &st.CredentialID, &st.Lookup, &st.Entry, &st.Lookups, &st.Hits); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// Purge deletes, in one transaction, the done requests (with their
// results) completed before resultsBefore, the resolved or failed batches
// that ended (or were created, or intended) before it and hold no request
// any more, the prefixes last seen before it (or not known to have been
// seen), and the ledger entries, turnaround samples and batch owners older
// than ledgerBefore. Queued and submitted requests and pending batches are
// never purged. It returns how many records it deleted.
//
// Turnaround samples go with the ledger, not with the results: a model
// used once a quarter still starts from what its last batches took, and a
// sample is never kept longer than the cost records of its batch.
func (s Store) Purge(ctx context.Context, resultsBefore, ledgerBefore time.Time) (int, error) {
	cut, ledgerCut := resultsBefore.UnixNano(), ledgerBefore.UnixNano()
	var total int64
	err := s.c.Write(ctx, func(tx *sql.Tx) error {
		total = 0
		for _, q := range []struct {
			sql string
			cut int64
		}{
			{`DELETE FROM requests WHERE state = 'done' AND coalesce(completed_at, accepted_at, 0) < ?`, cut},
			{`DELETE FROM batches WHERE state IN ('resolved', 'failed')
				AND coalesce(ended_at, created_at, intent_at, 0) < ?
				AND NOT EXISTS (SELECT 1 FROM requests WHERE requests.batch_id = batches.id)`, cut},
			{s.c.d.PurgePrefixes, cut},
			{`DELETE FROM ledger WHERE time < ?`, ledgerCut},
			{`DELETE FROM turnarounds WHERE at < ?`, ledgerCut},
			{`DELETE FROM batch_owners WHERE at < ?`, ledgerCut},
		} {
			n, err := affected(tx.ExecContext(ctx, s.c.sql(q.sql), q.cut))
			if err != nil {
				return s.c.errorf("purge: %w", err)
			}
			total += n
		}
		// Whole days of spend older than the ledger's cutoff go with it
		// (not counted: they are a sum of the ledger, not records).
		if _, err := tx.ExecContext(ctx, s.c.sql(`DELETE FROM client_spend WHERE day < ?`), dayOf(ledgerBefore)); err != nil {
			return s.c.errorf("purge: %w", err)
		}
		if s.c.d.Purge == nil {
			return nil
		}
		n, err := s.c.d.Purge(ctx, tx, ledgerCut)
		if err != nil {
			return s.c.errorf("purge: %w", err)
		}
		total += n
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int(total), nil
}
