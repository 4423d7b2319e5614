package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// PutCredential stores a sealed credential under its fingerprint; a no-op
// if one is stored already.
func (d *DB) PutCredential(ctx context.Context, credentialID string, sealed []byte) error {
	if credentialID == "" || len(sealed) == 0 {
		return errors.New("postgres: credential without an id or sealed bytes")
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO credentials (id, sealed) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
			credentialID, sealed)
		return err
	})
}

// GetCredential returns a sealed credential, or an error wrapping
// llmfleet.ErrNotFound.
func (d *DB) GetCredential(ctx context.Context, credentialID string) ([]byte, error) {
	return d.lookup(ctx, "credential", `SELECT sealed FROM credentials WHERE id = $1`, credentialID)
}

// RecordBatchOwner records that owner created the batch (or file)
// batchID through a pass-through API; the first owner recorded stands.
func (d *DB) RecordBatchOwner(ctx context.Context, batchID, owner string) error {
	return d.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO batch_owners (batch_id, owner, at) VALUES ($1, $2, $3)
			ON CONFLICT (batch_id) DO NOTHING`, batchID, owner, time.Now().UnixNano())
		if err != nil {
			return fmt.Errorf("postgres: batch owner: %w", err)
		}
		return nil
	})
}

// BatchOwner returns the recorded owner of batchID, or an error wrapping
// llmfleet.ErrNotFound.
func (d *DB) BatchOwner(ctx context.Context, batchID string) (string, error) {
	b, err := d.lookup(ctx, "batch owner", `SELECT convert_to(owner, 'UTF8') FROM batch_owners WHERE batch_id = $1`, batchID)
	return string(b), err
}

// lookup reads one value by id.
func (d *DB) lookup(ctx context.Context, what, query, id string) ([]byte, error) {
	db, err := d.conn()
	if err != nil {
		return nil, err
	}
	var v []byte
	err = db.QueryRowContext(ctx, query, id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("postgres: %s %s: %w", what, id, llmfleet.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return v, nil
}
