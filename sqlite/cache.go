package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

// The statements of the prompt-cache records. A count is added to the
// stored one; a prefix's tokens replace the stored ones when above 0, and
// each of its times keeps the later of the stored and the given, NULL
// (not known) losing to any known time (SQLite's max is NULL if either
// argument is: max(coalesce(a, b), coalesce(b, a)) is not).
const (
	addCacheStat = `INSERT INTO cache_stats (provider, model, credential_id, lookup, entry, lookups, hits)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (provider, model, credential_id, lookup, entry)
		DO UPDATE SET lookups = lookups + excluded.lookups, hits = hits + excluded.hits`
	putPrefix = `INSERT INTO prefixes (credential_id, hash, tokens, sync_until, batch_until, seen_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (credential_id, hash) DO UPDATE SET
			tokens = CASE WHEN excluded.tokens > 0 THEN excluded.tokens ELSE tokens END,
			sync_until = max(coalesce(sync_until, excluded.sync_until), coalesce(excluded.sync_until, sync_until)),
			batch_until = max(coalesce(batch_until, excluded.batch_until), coalesce(excluded.batch_until, batch_until)),
			seen_at = max(coalesce(seen_at, excluded.seen_at), coalesce(excluded.seen_at, seen_at))`
)

// AddCacheStats adds stats to the counts kept, in one transaction: one
// upsert per provider, model, credential, lookup and entry, which adds
// its counts to the stored ones.
func (d *DB) AddCacheStats(ctx context.Context, stats []llmfleet.CacheStat) error {
	if len(stats) == 0 {
		return nil
	}
	stats = storecodec.MergeCacheStats(stats)
	return d.conn.Write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, addCacheStat)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, s := range stats {
			if _, err := stmt.ExecContext(ctx, s.Provider, s.Model, s.CredentialID, string(s.Lookup), string(s.Entry),
				s.Lookups, s.Hits); err != nil {
				return fmt.Errorf("sqlite: cache stats: %w", err)
			}
		}
		return nil
	})
}

// PutPrefixes records what was learned of prefixes, in one transaction:
// one upsert per credential and hash.
func (d *DB) PutPrefixes(ctx context.Context, prefixes []llmfleet.PrefixState) error {
	if len(prefixes) == 0 {
		return nil
	}
	prefixes = storecodec.MergePrefixes(prefixes)
	return d.conn.Write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, putPrefix)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, p := range prefixes {
			if _, err := stmt.ExecContext(ctx, p.CredentialID, p.Hash, p.Tokens, storecodec.Nanos(p.SyncUntil),
				storecodec.Nanos(p.BatchUntil), storecodec.Nanos(p.SeenAt)); err != nil {
				return fmt.Errorf("sqlite: prefix: %w", err)
			}
		}
		return nil
	})
}

// Prefixes returns what is kept of the prefixes of hashes under a
// credential, as of one snapshot; hashes it does not hold are left out.
// It asks for up to idsPerQuery hashes a query.
func (d *DB) Prefixes(ctx context.Context, credentialID string, hashes []string) ([]llmfleet.PrefixState, error) {
	db, err := d.conn.Reader()
	if err != nil {
		return nil, err
	}
	hashes = distinct(hashes)
	if len(hashes) == 0 {
		return nil, nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var out []llmfleet.PrefixState
	for len(hashes) > 0 {
		n := min(len(hashes), idsPerQuery)
		got, err := prefixesOf(ctx, tx, credentialID, hashes[:n])
		if err != nil {
			return nil, fmt.Errorf("sqlite: prefixes: %w", err)
		}
		out, hashes = append(out, got...), hashes[n:]
	}
	return out, nil
}

// prefixesOf reads the prefixes of hashes (distinct) under a credential in
// one query.
func prefixesOf(ctx context.Context, tx *sql.Tx, credentialID string, hashes []string) ([]llmfleet.PrefixState, error) {
	rows, err := tx.QueryContext(ctx, `SELECT hash, tokens, sync_until, batch_until, seen_at FROM prefixes
		WHERE credential_id = ? AND hash IN (`+params(len(hashes))+`)`, append([]any{credentialID}, anys(hashes)...)...)
	if err != nil {
		return nil, err
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

// distinct returns ss without its repeats, in the order of their first
// occurrence.
func distinct(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
