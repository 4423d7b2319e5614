package postgres

import (
	"context"
	"database/sql/driver"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// This file keeps the pool from holding on to sessions that carry a
// setting the server has since changed. A session keeps the
// default_transaction_read_only it started with: after a read-only
// episode (ALTER DATABASE or ROLE … SET default_transaction_read_only =
// on, then RESET), or after a failover that pointed the URL at a standby
// for a while, the connections opened meanwhile refuse every write
// (SQLSTATE 25006) for as long as they live, though new sessions would
// write.

// readOnlySQLTransaction is the SQLSTATE of a write refused because the
// transaction is read-only.
const readOnlySQLTransaction = "25006"

// generationKey names, in a connection's custom data, the generation it
// was opened in.
const generationKey = "llmfleet.generation"

// generations numbers the pool's periods between refused writes. A
// connection records the generation current when it began to connect;
// a write refused as read-only, on any connection, starts the next one;
// and a connection of an earlier generation is discarded when
// database/sql is about to hand it out again (ResetSession answers
// driver.ErrBadConn: database/sql closes it and takes another, or opens
// one), so that every session that may carry the stale setting goes, not
// only the one that failed. Connections in use finish what they do and go
// when returned; the connection holding the replica name's lock, never
// handed out again, stays.
type generations struct {
	n atomic.Uint64
}

// options returns the pgx stdlib options that stamp and check the
// connections of a pool.
func (g *generations) options() []stdlib.OptionOpenDB {
	return []stdlib.OptionOpenDB{
		stdlib.OptionBeforeConnect(g.beforeConnect),
		stdlib.OptionResetSession(g.resetSession),
	}
}

// beforeConnect reads the generation before the session starts (one
// refused while it connects is then of the same generation, not an older
// one) and has the connection record it once it is up. cfg is a copy of
// the pool's configuration made for this connection.
func (g *generations) beforeConnect(_ context.Context, cfg *pgx.ConnConfig) error {
	born := g.n.Load()
	next := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgconn.PgConn) error {
		c.CustomData()[generationKey] = born
		if next != nil {
			return next(ctx, c)
		}
		return nil
	}
	return nil
}

// resetSession discards a connection opened before the latest refused
// write.
func (g *generations) resetSession(_ context.Context, c *pgx.Conn) error {
	if born, _ := c.PgConn().CustomData()[generationKey].(uint64); born < g.n.Load() {
		return driver.ErrBadConn
	}
	return nil
}

// watch returns an error handler that starts a new generation on a write
// refused as read-only, then does what next (the configuration's own
// handler: it closes the connection on a FATAL error) does.
func (g *generations) watch(next pgconn.PgErrorHandler) pgconn.PgErrorHandler {
	return func(c *pgconn.PgConn, e *pgconn.PgError) bool {
		if e.Code == readOnlySQLTransaction {
			g.n.Add(1)
		}
		if next != nil {
			return next(c, e)
		}
		return true
	}
}
