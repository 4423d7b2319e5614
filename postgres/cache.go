package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

// rowsPerStatement bounds the rows one upsert of AddCacheStats or
// PutPrefixes writes: a larger call takes several statements, in one
// transaction.
const rowsPerStatement = 1000

// The upserts of the prompt-cache records, one row per element of their
// arrays. A count is added to the stored one, in the row's lock, so that
// replicas adding to one count at once lose none. A prefix's tokens
// replace the stored ones when above 0, and each of its times keeps the
// later of the stored and the given (greatest ignores NULLs: one not
// known never replaces one known). Callers give the rows in key order
// (storecodec.MergeCacheStats, MergePrefixes), each key once: concurrent
// upserts then lock the rows they share in one order, and never
// deadlock.
const (
	addCacheStats = `INSERT INTO cache_stats AS c (provider, model, credential_id, lookup, entry, lookups, hits)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[])
		ON CONFLICT (provider, model, credential_id, lookup, entry)
		DO UPDATE SET lookups = c.lookups + excluded.lookups, hits = c.hits + excluded.hits`
	putPrefixes = `INSERT INTO prefixes AS p (credential_id, hash, tokens, sync_until, batch_until, seen_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[])
		ON CONFLICT (credential_id, hash) DO UPDATE SET
			tokens = CASE WHEN excluded.tokens > 0 THEN excluded.tokens ELSE p.tokens END,
			sync_until = greatest(p.sync_until, excluded.sync_until),
			batch_until = greatest(p.batch_until, excluded.batch_until),
			seen_at = greatest(p.seen_at, excluded.seen_at)`
)

// AddCacheStats adds stats to the counts the fleet keeps, in one
// transaction.
func (d *DB) AddCacheStats(ctx context.Context, stats []llmfleet.CacheStat) error {
	if len(stats) == 0 {
		return nil
	}
	stats = storecodec.MergeCacheStats(stats)
	return d.conn.Write(ctx, func(tx *sql.Tx) error {
		for i := 0; i < len(stats); i += rowsPerStatement {
			chunk := stats[i:min(i+rowsPerStatement, len(stats))]
			var providers, models, creds, lookups, entries []string
			var counts, hits []int64
			for _, s := range chunk {
				providers, models, creds = append(providers, s.Provider), append(models, s.Model), append(creds, s.CredentialID)
				lookups, entries = append(lookups, string(s.Lookup)), append(entries, string(s.Entry))
				counts, hits = append(counts, s.Lookups), append(hits, s.Hits)
			}
			if _, err := tx.ExecContext(ctx, addCacheStats, providers, models, creds, lookups, entries, counts, hits); err != nil {
				return fmt.Errorf("postgres: cache stats: %w", err)
			}
		}
		return nil
	})
}

// PutPrefixes records what was learned of prefixes, in one transaction.
func (d *DB) PutPrefixes(ctx context.Context, prefixes []llmfleet.PrefixState) error {
	if len(prefixes) == 0 {
		return nil
	}
	prefixes = storecodec.MergePrefixes(prefixes)
	return d.conn.Write(ctx, func(tx *sql.Tx) error {
		for i := 0; i < len(prefixes); i += rowsPerStatement {
			chunk := prefixes[i:min(i+rowsPerStatement, len(prefixes))]
			var creds, hashes []string
			var tokens []int64
			var syncUntil, batchUntil, seenAt []*int64
			for _, p := range chunk {
				creds, hashes, tokens = append(creds, p.CredentialID), append(hashes, p.Hash), append(tokens, p.Tokens)
				syncUntil, batchUntil = append(syncUntil, nullNanos(p.SyncUntil)), append(batchUntil, nullNanos(p.BatchUntil))
				seenAt = append(seenAt, nullNanos(p.SeenAt))
			}
			if _, err := tx.ExecContext(ctx, putPrefixes, creds, hashes, tokens, syncUntil, batchUntil, seenAt); err != nil {
				return fmt.Errorf("postgres: prefixes: %w", err)
			}
		}
		return nil
	})
}

// Prefixes returns what the fleet keeps of the prefixes of hashes under a
// credential, in one query; hashes it does not hold are left out.
func (d *DB) Prefixes(ctx context.Context, credentialID string, hashes []string) ([]llmfleet.PrefixState, error) {
	db, err := d.conn.Reader()
	if err != nil {
		return nil, err
	}
	if len(hashes) == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT hash, tokens, sync_until, batch_until, seen_at FROM prefixes
		WHERE credential_id = $1 AND hash = ANY($2)`, credentialID, hashes)
	if err != nil {
		return nil, fmt.Errorf("postgres: prefixes: %w", err)
	}
	defer rows.Close()
	var out []llmfleet.PrefixState
	for rows.Next() {
		p := llmfleet.PrefixState{CredentialID: credentialID}
		var syncUntil, batchUntil, seenAt sql.NullInt64
		if err := rows.Scan(&p.Hash, &p.Tokens, &syncUntil, &batchUntil, &seenAt); err != nil {
			return nil, err
		}
		p.SyncUntil, p.BatchUntil, p.SeenAt = storecodec.TimeOf(syncUntil), storecodec.TimeOf(batchUntil), storecodec.TimeOf(seenAt)
		out = append(out, p)
	}
	return out, rows.Err()
}

// purgePrefixes deletes the prefixes last seen before its argument, or
// not known to have been seen (the zero time is before any); it is
// written, as the core's statements are, with ?. It locks them first, in
// the order of their keys, as PutPrefixes does: a Purge and a PutPrefixes
// that share rows wait for each other rather than deadlock (and a prefix
// seen again meanwhile is kept).
const purgePrefixes = `DELETE FROM prefixes WHERE (credential_id, hash) IN (
		SELECT credential_id, hash FROM prefixes WHERE seen_at IS NULL OR seen_at < ?
		ORDER BY credential_id COLLATE "C", hash COLLATE "C" FOR UPDATE)`
