package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/llmfleet/llmfleet/sqlstore"
)

// cancelDeadline is how long a canceled statement's connection waits for
// the server to answer the cancel request before it is closed.
const cancelDeadline = 10 * time.Second

// ErrClosed is returned, wrapped, by the methods of a DB that is not
// open.
var ErrClosed = sqlstore.ErrClosed

// core is the llmfleet.Store methods the SQL stores share (package
// sqlstore), which DB embeds.
type core = sqlstore.Store

// DB is the PostgreSQL Store. Set URL, then Open it; Close it when done.
type DB struct {
	// URL is the database's URL: postgres://user@host:port/db?sslmode=…,
	// with search_path=SCHEMA for a schema of the fleet's own.
	URL string
	// MaxConns bounds the connections to the server; 0 means 16, and
	// below 2 is 2: the replica name's lock holds one for as long as the
	// DB is open (with 1, Open waited forever for a second one).
	MaxConns int
	// ConnMaxLifetime bounds how long a pooled connection serves: a
	// session keeps the settings it started with (ALTER DATABASE or ROLE
	// … SET reaches new sessions only), so connections are renewed, which
	// bounds how long a changed setting takes to reach them all. 0 means
	// 5 minutes; a negative value, no bound. Besides, a write refused
	// because the session is read-only (SQLSTATE 25006: it started while
	// default_transaction_read_only was on, or on a standby) has every
	// pooled connection opened before it discarded when next taken from
	// the pool, so that the writes after the episode go on new sessions.
	// The connection holding the replica name's lock, and the one Watch
	// listens on, are not renewed.
	ConnMaxLifetime time.Duration
	// ConnMaxIdleTime closes a pooled connection unused for that long; 0
	// means 1 minute; a negative value, no bound.
	ConnMaxIdleTime time.Duration
	// Replica names this process in the fleet (default: a random name).
	// Open takes a session advisory lock on the name, held until Close:
	// a second store of the same name on the same database and schema
	// fails to open with an error wrapping llmfleet.ErrLocked. A process
	// restarted under its name adopts what its earlier run owned at once
	// (Adopt); under another name, once the earlier run's lease ends.
	Replica string
	// Lease is the lease Open starts with, until the first Heartbeat;
	// 0 means 15s. A third of it bounds, besides, how long the server
	// keeps a transaction of this process's open while it sends nothing
	// (idle_in_transaction_session_timeout, at least 1s, unless the URL
	// sets it): a process paused or stuck inside a transaction would
	// otherwise hold its row locks, and stall the replicas that adopt its
	// work, for as long as it stays so; a third, so that a replica whose
	// adoption waited on those locks still renews its own lease in time.
	Lease time.Duration

	// Committers is how many groups of AddRequest calls are committed at
	// once; 0 means 2 (on a 2-core machine, 1 and 2 accepted about 14,500
	// requests/s from 128 callers, 4 about 12,000, 8 about 11,500).
	Committers int

	core                  // the shared methods, over conn
	conn   *sqlstore.Conn // the database as the core uses it, from Open to Close
	gens   generations    // of the pool's connections: see stale.go
	db     *sql.DB        // the pool
	lock   *sql.Conn      // holding the replica name's lock
	run    run            // this process's run in the fleet: see lease.go
	notify string         // the channel of completions
}

// Open connects, creates the URL's schema if missing and applies the
// migrations not applied yet.
func Open(ctx context.Context, url string) (*DB, error) {
	d := &DB{URL: url}
	if err := d.Open(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// IsURL reports whether s is a PostgreSQL URL (postgres:// or
// postgresql://) rather than a file path.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// idleInTx is the server's setting that ends a session idle inside a
// transaction for longer than it, in milliseconds: see DB.Lease.
const idleInTx = "idle_in_transaction_session_timeout"

// Open connects to d.URL, creates its schema if missing and applies the
// migrations not applied yet, under an advisory lock.
func (d *DB) Open(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(d.URL)
	if err != nil {
		return fmt.Errorf("postgres: %s: %w", redact(d.URL), err)
	}
	if _, set := cfg.RuntimeParams[idleInTx]; !set {
		cfg.RuntimeParams[idleInTx] = fmt.Sprint(max(cmp.Or(d.Lease, 15*time.Second)/3, time.Second).Milliseconds())
	}
	db := d.pool(cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return fmt.Errorf("postgres: %s: %w", redact(d.URL), err)
	}
	schema := cfg.RuntimeParams["search_path"]
	name := d.Replica
	if name == "" {
		name = randomName()
	}
	lock, err := nameLock(ctx, db, schema, name)
	if err != nil {
		db.Close()
		return err
	}
	token := name + "/" + randomName()
	err = migrate(ctx, db, schema)
	if err == nil {
		err = register(ctx, db, name, token, cmp.Or(d.Lease, 15*time.Second))
	}
	var conn *sqlstore.Conn
	if err == nil {
		d.run.start(token)
		conn, err = sqlstore.Open(db, db, d.dialect(db, channel(schema)))
	}
	if err != nil {
		lock.Close()
		db.Close()
		return err
	}
	d.db, d.lock, d.notify, d.conn, d.core = db, lock, channel(schema), conn, sqlstore.NewStore(conn)
	return nil
}

// Close stops the committers, once the requests handed to them are
// answered, ends this run's lease, releases the replica name's lock and
// closes the connections. It may be called more than once.
func (d *DB) Close() error {
	if !d.conn.Close() {
		return nil
	}
	endLease(d.db, d.run.current())
	if d.lock != nil {
		// Released here, not only with the session, whose end the server
		// notices a moment after the connection closes.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d.lock.ExecContext(ctx, `SELECT pg_advisory_unlock_all()`)
		cancel()
		d.lock.Close()
		d.lock = nil
	}
	return d.db.Close()
}

// Defaults of the pool's connections (DB.ConnMaxLifetime,
// DB.ConnMaxIdleTime).
const (
	defaultConnMaxLifetime = 5 * time.Minute
	defaultConnMaxIdleTime = time.Minute
)

// pool opens the connection pool of cfg, its connections bounded in
// number and lifetime, and discarded after a write refused as read-only.
func (d *DB) pool(cfg *pgx.ConnConfig) *sql.DB {
	cfg.OnPgError = d.gens.watch(cfg.OnPgError)
	// A canceled statement is canceled on the server (a cancel request),
	// not cut off on the client's side only: a statement left waiting for
	// a lock would otherwise go on and commit later (AddRequest relies on
	// it: see Dialect.Canceled in package sqlstore).
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelDeadline}
	}
	db := stdlib.OpenDB(*cfg, d.gens.options()...)
	db.SetMaxOpenConns(d.maxConns())
	db.SetMaxIdleConns(d.maxConns())
	db.SetConnMaxLifetime(orDefault(d.ConnMaxLifetime, defaultConnMaxLifetime))
	db.SetConnMaxIdleTime(orDefault(d.ConnMaxIdleTime, defaultConnMaxIdleTime))
	return db
}

// maxConns is MaxConns, or its default, and at least 2.
func (d *DB) maxConns() int {
	if d.MaxConns <= 0 {
		return 16
	}
	return max(d.MaxConns, 2)
}

// orDefault returns v, or def for 0; a negative v is 0 (no bound, to
// database/sql).
func orDefault(v, def time.Duration) time.Duration {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// redact returns a URL without its password.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
