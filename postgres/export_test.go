package postgres

import "database/sql"

// Abandon drops the DB's connections as a killed process would: its
// lease is not ended.
func (d *DB) Abandon() {
	d.conn.Close()
	d.lock.Close()
	d.db.Close()
}

// DropIdle closes the pool's idle connections: the next statements run
// on new sessions.
func (d *DB) DropIdle() {
	d.db.SetMaxIdleConns(0)
	d.db.SetMaxIdleConns(d.maxConns())
}

// PoolStats returns the pool's statistics.
func (d *DB) PoolStats() sql.DBStats {
	return d.db.Stats()
}

// Pool returns the DB's pool of connections.
func (d *DB) Pool() *sql.DB { return d.db }
