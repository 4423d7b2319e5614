package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// RecordBatchOwner records that the client named owner created the
// provider batch batchID (through the proxy's pass-through Message
// Batches API). Recording a batch again keeps its first owner.
func (d *DB) RecordBatchOwner(ctx context.Context, batchID, owner string) error {
	return d.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO batch_owners (batch_id, owner, at) VALUES (?, ?, ?)
			ON CONFLICT (batch_id) DO NOTHING`, batchID, owner, time.Now().UnixNano())
		if err != nil {
			return fmt.Errorf("sqlite: batch owner: %w", err)
		}
		return nil
	})
}

// BatchOwner returns the owner RecordBatchOwner recorded for a provider
// batch, or an error wrapping llmfleet.ErrNotFound if none was.
func (d *DB) BatchOwner(ctx context.Context, batchID string) (string, error) {
	if d.r == nil {
		return "", ErrClosed
	}
	var owner string
	err := d.r.QueryRowContext(ctx, `SELECT owner FROM batch_owners WHERE batch_id = ?`, batchID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("sqlite: batch owner of %s: %w", batchID, llmfleet.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: batch owner: %w", err)
	}
	return owner, nil
}
