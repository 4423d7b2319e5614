package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// The schema's migrations, named NNNN_what.sql and numbered from 1 without
// gaps. A migration is never edited once released: a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one schema step; applying it sets PRAGMA user_version to
// its version.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s: name is not NNNN_what.sql", e.Name())
		}
		b, err := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.name, i+1)
		}
	}
	return out, nil
}

// migrate applies, in one transaction, the migrations newer than the
// database's user_version. A database written by a newer llmfleet, whose
// version this one does not know, is refused.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var current int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return err
	}
	if current > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this llmfleet's (%d)", current, len(ms))
	}
	if current == len(ms) {
		return nil
	}
	for _, m := range ms[current:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if m.version == spendVersion {
			if err := sumBlockSpend(ctx, tx); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(m.version)); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	return tx.Commit()
}

// SchemaVersion returns the schema version of the open database.
func (d *DB) SchemaVersion(ctx context.Context) (int, error) {
	db, err := d.conn.Reader()
	if err != nil {
		return 0, err
	}
	var v int
	err = db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}
