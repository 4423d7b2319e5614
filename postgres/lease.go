package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// This file is the DB's runs in a fleet of replicas
// (llmfleet.SharedStore): each Open registers a run of its replica name,
// with a lease that Heartbeat renews and Close ends.

var _ llmfleet.SharedStore = (*DB)(nil)

// run is this process's current run in the fleet: its owner token, the
// owner of what it holds, which Heartbeat replaces when the run's lease
// had ended.
type run struct {
	mu    sync.Mutex
	token string
	all   []string // every token of this DB's runs, the current one last
}

// start sets the token of the run Open registered.
func (r *run) start(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.token, r.all = token, []string{token}
}

// current returns the token of the current run.
func (r *run) current() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.token
}

// renew makes fresh the current run, unless another renewal replaced old
// already.
func (r *run) renew(old, fresh string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.token == old {
		r.token, r.all = fresh, append(r.all, fresh)
	}
}

// tokens returns the current token and every token this DB's runs had.
func (r *run) tokens() (current string, all []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.token, slices.Clone(r.all)
}

// randomName returns 8 random hex digits.
func randomName() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// register records a new run of a replica: the earlier runs of its name
// are over (Open holds the name's lock), so their lease ends now, and
// this one's starts.
func register(ctx context.Context, db *sql.DB, name, token string, lease time.Duration) error {
	_, err := db.ExecContext(ctx, `WITH ended AS (
			UPDATE replicas SET lease_until = clock_timestamp() WHERE name = $1 AND lease_until > clock_timestamp())
		INSERT INTO replicas (id, name, started_at, lease_until)
		VALUES ($2, $1, clock_timestamp(), clock_timestamp() + make_interval(secs => $3))`,
		name, token, lease.Seconds())
	if err != nil {
		return fmt.Errorf("postgres: registering replica %s: %w", name, err)
	}
	return nil
}

// Heartbeat renews this run's lease for ttl, by the server's clock (0
// ends it). held is false when it had ended before: what the run owned
// may have been adopted by another replica meanwhile, so this process
// goes on as a new run of its name (a new owner token, leased for ttl),
// leaving the ended run's batches and queued requests to whichever
// replica adopts them first, this one included (Adopt).
func (d *DB) Heartbeat(ctx context.Context, ttl time.Duration) (held bool, err error) {
	token := d.run.current()
	fresh := ""
	err = d.conn.Write(ctx, func(tx *sql.Tx) error {
		fresh = ""
		var until, now time.Time
		err := tx.QueryRowContext(ctx, `SELECT lease_until, clock_timestamp() FROM replicas WHERE id = $1 FOR UPDATE`, token).Scan(&until, &now)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Forgotten (a day after its lease ended): a new run.
		case err != nil:
			return err
		case until.After(now) || ttl == 0:
			held = true
			_, err = tx.ExecContext(ctx, `UPDATE replicas SET lease_until = clock_timestamp() + make_interval(secs => $2) WHERE id = $1`,
				token, ttl.Seconds())
			return err
		}
		name, _, _ := strings.Cut(token, "/")
		fresh = name + "/" + randomName()
		_, err = tx.ExecContext(ctx, `INSERT INTO replicas (id, name, started_at, lease_until)
			VALUES ($1, $2, clock_timestamp(), clock_timestamp() + make_interval(secs => $3))`, fresh, name, ttl.Seconds())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: renewing the lease: %w", err)
	}
	if fresh != "" {
		d.run.renew(token, fresh)
	}
	return held, nil
}

// endLease ends this run's lease, so that the others adopt what it still
// owns at once.
func endLease(db *sql.DB, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	db.ExecContext(ctx, `UPDATE replicas SET lease_until = clock_timestamp() WHERE id = $1`, token)
}

// FleetStart returns when the fleet's earliest replica run still
// registered started (runs are forgotten a day after their lease ended):
// the start of the figures every replica shows alike.
func (d *DB) FleetStart(ctx context.Context) (time.Time, error) {
	db, err := d.conn.Reader()
	if err != nil {
		return time.Time{}, err
	}
	var at sql.NullTime
	if err := db.QueryRowContext(ctx, `SELECT min(started_at) FROM replicas`).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("postgres: the fleet's start: %w", err)
	}
	return at.Time, nil
}
