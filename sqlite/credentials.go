package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/llmfleet/llmfleet"
)

// PutCredential stores a sealed credential under its fingerprint; it is a
// no-op if one is stored already. The store never sees the secret: sealing
// is the caller's (see package vault).
func (d *DB) PutCredential(ctx context.Context, credentialID string, sealed []byte) error {
	if credentialID == "" || len(sealed) == 0 {
		return errors.New("sqlite: credential without an id or sealed bytes")
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO credentials (id, sealed) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`,
			credentialID, sealed)
		return err
	})
}

// GetCredential returns a sealed credential, or an error wrapping
// llmfleet.ErrNotFound.
func (d *DB) GetCredential(ctx context.Context, credentialID string) ([]byte, error) {
	if d.r == nil {
		return nil, ErrClosed
	}
	var sealed []byte
	err := d.r.QueryRowContext(ctx, `SELECT sealed FROM credentials WHERE id = ?`, credentialID).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: credential %s: %w", credentialID, llmfleet.ErrNotFound)
	}
	return sealed, err
}
