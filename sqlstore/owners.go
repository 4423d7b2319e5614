package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Owners keeps which client made which batch or file through the proxy's
// pass-through APIs in proxy-held-key mode (proxy.BatchOwners), in table
// batch_owners. Store embeds it.
type Owners struct{ c *Conn }

// RecordBatchOwner records that the client named owner created the
// provider batch (or file) batchID, through the proxy's pass-through
// APIs. Recording a batch again keeps its first owner.
func (o Owners) RecordBatchOwner(ctx context.Context, batchID, owner string) error {
	return o.c.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, o.c.sql(`INSERT INTO batch_owners (batch_id, owner, at) VALUES (?, ?, ?)
			ON CONFLICT (batch_id) DO NOTHING`), batchID, owner, time.Now().UnixNano())
		if err != nil {
			return o.c.errorf("batch owner: %w", err)
		}
		return nil
	})
}

// ForgetBatchOwner removes the owner of batchID, if one was recorded.
func (o Owners) ForgetBatchOwner(ctx context.Context, batchID string) error {
	return o.c.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, o.c.sql(`DELETE FROM batch_owners WHERE batch_id = ?`), batchID); err != nil {
			return o.c.errorf("batch owner: %w", err)
		}
		return nil
	})
}

// BatchOwner returns the owner RecordBatchOwner recorded for a provider
// batch, or an error wrapping llmfleet.ErrNotFound if none was.
func (o Owners) BatchOwner(ctx context.Context, batchID string) (string, error) {
	var owner string
	err := lookup(ctx, o.c, `SELECT owner FROM batch_owners WHERE batch_id = ?`, batchID, &owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", o.c.errorf("batch owner of %s: %w", batchID, llmfleet.ErrNotFound)
	}
	if err != nil {
		return "", o.c.errorf("batch owner: %w", err)
	}
	return owner, nil
}
