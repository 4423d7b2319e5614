package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrations embed.FS

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
