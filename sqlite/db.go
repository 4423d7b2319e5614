package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlstore"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// ErrClosed is returned, wrapped, by the methods of a DB before Open and
// after Close.
var ErrClosed = sqlstore.ErrClosed

// core is the llmfleet.Store methods the SQL stores share (package
// sqlstore), which DB embeds.
type core = sqlstore.Store

// DB is the embedded SQLite llmfleet.Store. Set its fields, then call Open;
// the zero value opens the database at DefaultPath. A DB must not be copied
// or reconfigured after Open. Close it when done. Its methods return
// ErrClosed before Open and after Close.
type DB struct {
	// Path is the database file. Empty means DefaultPath(), which Open
	// then sets Path to. Its directory
	// is created (0700) when missing, and a new file is created 0600: it
	// holds prompts and answers.
	Path string

	// BusyTimeout is how long a statement waits for a lock held by
	// another connection or process. Zero means 5s.
	BusyTimeout time.Duration

	// Synchronous is SQLite's synchronous setting, "FULL" or "NORMAL".
	// Empty means "FULL": each commit is fsynced before the write returns,
	// so it survives a power loss as well as a crash of the process. With
	// "NORMAL" (in WAL mode) a commit survives a crash of the process but
	// the last ones may be lost on a power loss.
	Synchronous string

	// MaxGroup is the most AddRequest calls committed in one transaction.
	// Zero means 512.
	MaxGroup int

	// Logger receives the store's operational messages. Nil means
	// slog.Default(). Request bodies and sealed credentials are never
	// logged.
	Logger *slog.Logger

	core                // the shared methods, over conn
	conn *sqlstore.Conn // the database as the core uses it, from Open to Close
	w    *sql.DB        // the one writing connection
	r    *sql.DB        // the reading connections
	lock *os.File       // holds the exclusive lock (see lockFile) until Close
}

var _ llmfleet.Store = (*DB)(nil)

// Open opens the database at path with the default settings: shorthand
// for (&DB{Path: path}).Open(ctx).
func Open(ctx context.Context, path string) (*DB, error) {
	d := &DB{Path: path}
	if err := d.Open(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// Open takes the exclusive lock of the database, opens it, creating it if
// needed, applies the migrations it lacks and starts the group committer.
// ctx bounds the opening only.
//
// A database is used by one DB at a time: while another process, or
// another DB of this one, has it open, Open fails with an error wrapping
// llmfleet.ErrLocked that names the holder's pid. The lock is an
// flock(2) on the file Path+".lock", released by Close or by the end of
// the process, a SIGKILL included. (On systems without flock, Open takes
// no lock.)
func (d *DB) Open(ctx context.Context) error {
	if d.w != nil {
		return errors.New("sqlite: DB opened twice")
	}
	if d.Path == "" {
		p, err := DefaultPath()
		if err != nil {
			return err
		}
		d.Path = p
	}
	if err := createFile(d.Path); err != nil {
		return err
	}
	lock, err := lockFile(d.Path)
	if err != nil {
		return err
	}
	w, r, err := d.connect(ctx)
	if err != nil {
		lock.Close()
		return err
	}
	if err := migrate(ctx, w); err != nil {
		w.Close()
		r.Close()
		lock.Close()
		return fmt.Errorf("sqlite: migrating %s: %w", d.Path, err)
	}
	if d.MaxGroup <= 0 {
		d.MaxGroup = 512
	}
	conn, err := sqlstore.Open(w, r, d.dialect(w))
	if err != nil {
		w.Close()
		r.Close()
		lock.Close()
		return err
	}
	d.w, d.r, d.lock, d.conn, d.core = w, r, lock, conn, sqlstore.NewStore(conn)
	d.logger().Debug("sqlite store opened", "path", d.Path)
	return nil
}

// Close stops the group committer, after committing the requests handed to
// it, closes the database and then releases its lock. Calling it again
// returns nil.
func (d *DB) Close() error {
	if !d.conn.Close() {
		return nil
	}
	err := errors.Join(d.r.Close(), d.w.Close())
	return errors.Join(err, d.lock.Close())
}

func (d *DB) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}

// connect opens the writing connection, which sets up WAL mode, and then
// the pool of reading ones.
func (d *DB) connect(ctx context.Context) (w, r *sql.DB, err error) {
	busy := d.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	syncMode := d.Synchronous
	switch syncMode {
	case "":
		syncMode = "FULL"
	case "FULL", "NORMAL", "full", "normal":
	default:
		return nil, nil, fmt.Errorf("sqlite: Synchronous %q: want FULL or NORMAL", syncMode)
	}
	abs, err := filepath.Abs(d.Path)
	if err != nil {
		return nil, nil, err
	}
	common := url.Values{}
	common.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	common.Add("_pragma", "journal_mode(WAL)")
	common.Add("_pragma", "synchronous("+syncMode+")")
	common.Add("_pragma", "foreign_keys(1)")

	wq := cloneValues(common)
	// One writer; BEGIN IMMEDIATE so that a transaction never has to
	// upgrade its lock, which could fail with SQLITE_BUSY against another
	// process.
	wq.Set("_txlock", "immediate")
	w, err = sql.Open("sqlite", dsn(abs, wq))
	if err != nil {
		return nil, nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("sqlite: opening %s: %w", d.Path, err)
	}

	rq := cloneValues(common)
	rq.Add("_pragma", "query_only(1)")
	r, err = sql.Open("sqlite", dsn(abs, rq))
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, nil, fmt.Errorf("sqlite: opening %s: %w", d.Path, err)
	}
	return w, r, nil
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// dsn builds a file: URI, so that any character of the path is escaped.
func dsn(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	if u.Path != "" && u.Path[0] != '/' { // Windows: file:///C:/...
		u.Path = "/" + u.Path
	}
	return u.String()
}

// createFile creates the directory (0700) and an empty database file
// (0600) when they are missing, so that SQLite, which gives its -wal and
// -shm files the mode of the database file, never makes them readable by
// others.
func createFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return f.Close()
}
