package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CompleteRequests announces the requests it completed with NOTIFY, on a
// channel of the schema's (Dialect.Completed); Watch LISTENs.

// channel returns the NOTIFY channel of a schema's completions (an
// identifier of at most 63 bytes whatever the schema's name).
func channel(schema string) string {
	h := sha256.Sum256([]byte(schema))
	return "llmfleet_done_" + hex.EncodeToString(h[:8])
}

// maxPayload bounds a NOTIFY payload (the server's limit is 8000 bytes).
const maxPayload = 7000

// notifyDone announces on channel, at the commit of tx, the requests it
// completed.
func notifyDone(ctx context.Context, tx *sql.Tx, channel string, ids []string) error {
	for len(ids) > 0 {
		n, size := 0, 0
		for n < len(ids) && (n == 0 || size+len(ids[n])+1 <= maxPayload) {
			size += len(ids[n]) + 1
			n++
		}
		if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, channel, strings.Join(ids[:n], ",")); err != nil {
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
