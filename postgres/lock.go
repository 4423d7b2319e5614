package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// lockTries is how many times Open tries the lock of its replica name, a
// tenth of a second apart, before it concludes that another process
// holds it.
const lockTries = 20

// nameLock takes the session advisory lock of a replica name in schema
// on a connection of its own, which it returns; one held elsewhere is
// llmfleet.ErrLocked.
func nameLock(ctx context.Context, db *sql.DB, schema, name string) (*sql.Conn, error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	var got bool
	// A lock held by a session that is ending (its process just closed
	// the store, or was killed) is free a moment later: try for a while.
	for try := 0; ; try++ {
		if err := c.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtext('llmfleet replica ' || $1 || ' ' || $2))`, schema, name).Scan(&got); err != nil {
			c.Close()
			return nil, fmt.Errorf("postgres: %w", err)
		}
		if got || try == lockTries-1 {
			break
		}
		select {
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !got {
		c.Close()
		where := "the database's default schema"
		if schema != "" {
			where = "schema " + schema
		}
		return nil, fmt.Errorf("postgres: replica %q of %s is held by another process: %w", name, where, llmfleet.ErrLocked)
	}
	return c, nil
}
