package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/llmfleet/llmfleet"
)

//go:embed migrations/*.sql
var migrations embed.FS

// cancelDeadline is how long a canceled statement's connection waits for
// the server to answer the cancel request before it is closed.
const cancelDeadline = 10 * time.Second

// lockTries is how many times Open tries the lock of its replica name, a
// tenth of a second apart, before it concludes that another process
// holds it.
const lockTries = 20

// ErrClosed is returned by the methods of a DB that is not open.
var ErrClosed = errors.New("postgres: store closed")

// DB is the PostgreSQL Store. Set URL, then Open it; Close it when done.
type DB struct {
	// URL is the database's URL: postgres://user@host:port/db?sslmode=…,
	// with search_path=SCHEMA for a schema of the fleet's own.
	URL string
	// MaxConns bounds the connections to the server; 0 means 16.
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
	// 0 means 15s.
	Lease time.Duration

	// Committers is how many groups of AddRequest calls are committed at
	// once; 0 means 2 (on a 2-core machine, 1 and 2 accepted about 14,500
	// requests/s from 128 callers, 4 about 12,000, 8 about 11,500).
	Committers int

	gens   generations // of the pool's connections: see stale.go
	mu     sync.RWMutex
	db     *sql.DB
	lock   *sql.Conn // holding the replica name's lock
	token  string    // this run's id: the owner of what it holds
	notify string    // the channel of completions
	closed bool
	adds   chan *addOp
	quit   chan struct{}
	wg     sync.WaitGroup
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

// Open connects to d.URL, creates its schema if missing and applies the
// migrations not applied yet, under an advisory lock.
func (d *DB) Open(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(d.URL)
	if err != nil {
		return fmt.Errorf("postgres: %s: %w", redact(d.URL), err)
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
	if err == nil {
		err = migrate(ctx, db, schema)
	}
	if err == nil {
		err = register(ctx, db, name, token, cmp.Or(d.Lease, 15*time.Second))
	}
	if err != nil {
		lock.Close()
		db.Close()
		return err
	}
	n := d.Committers
	if n <= 0 {
		n = 2
	}
	d.mu.Lock()
	d.db, d.lock, d.closed = db, lock, false
	d.token, d.notify = token, channel(schema)
	d.adds, d.quit = make(chan *addOp, maxGroup), make(chan struct{})
	for range n {
		d.wg.Add(1)
		go d.committer(db)
	}
	d.mu.Unlock()
	return nil
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
	// it, see insertGroup).
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

// maxConns is MaxConns or its default.
func (d *DB) maxConns() int {
	if d.MaxConns <= 0 {
		return 16
	}
	return d.MaxConns
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

// redact returns a URL without its password.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// migrate creates schema (if not empty) and applies the migrations, in a
// transaction holding an advisory lock named after the schema: processes
// starting together apply each migration once.
func migrate(ctx context.Context, db *sql.DB, schema string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("postgres: migrating: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('llmfleet migrations ' || $1))`, schema); err != nil {
		return fmt.Errorf("postgres: migrating: %w", err)
	}
	if first, _, _ := strings.Cut(schema, ","); strings.TrimSpace(first) != "" {
		name := strings.Trim(strings.TrimSpace(first), `"`)
		if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("postgres: schema %s: %w", name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS llmfleet_migrations (version integer PRIMARY KEY)`); err != nil {
		return fmt.Errorf("postgres: migrating: %w", err)
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		base := strings.TrimPrefix(f, "migrations/")
		v, err := strconv.Atoi(base[:4])
		if err != nil {
			return fmt.Errorf("postgres: migration %s: not NNNN_name.sql", base)
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM llmfleet_migrations WHERE version = $1`, v).Scan(&one)
		if err == nil {
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("postgres: migrating: %w", err)
		}
		text, err := migrations.ReadFile(f)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(text)); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", base, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO llmfleet_migrations (version) VALUES ($1)`, v); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", base, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("postgres: migrating: %w", err)
	}
	return nil
}

// Close stops the committers, once the requests handed to them are
// answered, and closes the connections. It may be called more than once.
func (d *DB) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.db == nil {
		d.closed = true
		return nil
	}
	d.closed = true
	// No AddRequest is between its check and its send now (they hold the
	// read lock): drain what was handed over, then stop.
	for len(d.adds) > 0 {
		insertGroup(d.db, d.token, drain(d.adds))
	}
	close(d.quit)
	d.wg.Wait()
	for len(d.adds) > 0 {
		insertGroup(d.db, d.token, drain(d.adds))
	}
	endLease(d.db, d.token)
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

// conn returns the connection pool, or ErrClosed.
func (d *DB) conn() (*sql.DB, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed || d.db == nil {
		return nil, ErrClosed
	}
	return d.db, nil
}

// write runs fn in a transaction and commits it.
func (d *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	db, err := d.conn()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// affected returns the rows affected by an Exec.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// drain takes what is waiting in adds, at most maxGroup.
func drain(adds chan *addOp) []*addOp {
	var group []*addOp
	for len(group) < maxGroup {
		select {
		case op := <-adds:
			group = append(group, op)
		default:
			return group
		}
	}
	return group
}
