package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrClosed is returned, wrapped with the store's name, by the methods of
// a store that is not open: before Open, and after Close.
var ErrClosed = errors.New("store closed")

// Conn is a store's open database, as the core uses it: where it writes
// and where it reads, its Dialect, and its group committer, from Open to
// Close. Its methods are safe for concurrent use; on a nil Conn they
// return ErrClosed.
type Conn struct {
	d    Dialect
	w, r *sql.DB
	adds *committer
}

// Open returns the Conn of a store's database: w is where it writes, r
// where it reads (the same pool, or one of readers), and d what its SQL
// does differently. It starts the group committer. The handles stay the
// caller's, to close after Close.
func Open(w, r *sql.DB, d Dialect) (*Conn, error) {
	if miss := d.missing(); len(miss) > 0 {
		return nil, fmt.Errorf("sqlstore: the dialect lacks %s", strings.Join(miss, ", "))
	}
	return &Conn{d: d, w: w, r: r, adds: startCommitter(d)}, nil
}

// Close refuses new calls, with ErrClosed, and returns once every
// AddRequest call handed over is answered. It reports whether this call
// closed c (false: closed before, or nil).
func (c *Conn) Close() bool {
	return c != nil && c.adds.stop()
}

// Err returns ErrClosed, wrapped, if c is closed (or nil), else nil.
func (c *Conn) Err() error {
	if c == nil {
		return ErrClosed
	}
	if c.adds.isStopped() {
		return c.errorf("%w", ErrClosed)
	}
	return nil
}

// Reader returns the pool reads go to, unless c is closed.
func (c *Conn) Reader() (*sql.DB, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	return c.r, nil
}

// Write runs fn in a transaction on the writing pool and commits it, or
// rolls it back if fn fails.
func (c *Conn) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := c.Err(); err != nil {
		return err
	}
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// errorf returns an error of the store: its name, then the message.
func (c *Conn) errorf(format string, args ...any) error { return errorf(c.d.Name, format, args...) }

// errorf returns an error of the store named name.
func errorf(name, format string, args ...any) error {
	return fmt.Errorf(name+": "+format, args...)
}

// sql returns a statement of the core in the Dialect's placeholders.
func (c *Conn) sql(query string) string {
	if !c.d.Numbered {
		return query
	}
	return number(query)
}

// number rewrites the ? placeholders of query as $1, $2, … (query has no
// ? within a literal).
func number(query string) string {
	var b strings.Builder
	n := 0
	for {
		i := strings.IndexByte(query, '?')
		if i < 0 {
			b.WriteString(query)
			return b.String()
		}
		n++
		b.WriteString(query[:i])
		b.WriteString("$" + strconv.Itoa(n))
		query = query[i+1:]
	}
}

// byteOrder returns cols, comma-separated, each followed by the Dialect's
// ByteOrder: an ORDER BY that sorts them byte by byte.
func (c *Conn) byteOrder(cols ...string) string {
	for i := range cols {
		cols[i] += c.d.ByteOrder
	}
	return strings.Join(cols, ", ")
}

// affected returns the rows affected by an Exec.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
