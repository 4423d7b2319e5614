package postgres

import "database/sql"

// Abandon drops the DB's connections as a killed process would: its
// lease is not ended.
func (d *DB) Abandon() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	close(d.quit)
	d.wg.Wait()
	d.lock.Close()
	d.db.Close()
}

// DropIdle closes the pool's idle connections: the next statements run
// on new sessions.
func (d *DB) DropIdle() {
	d.mu.RLock()
	defer d.mu.RUnlock()
	d.db.SetMaxIdleConns(0)
	d.db.SetMaxIdleConns(d.maxConns())
}

// PoolStats returns the pool's statistics.
func (d *DB) PoolStats() sql.DBStats {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.db.Stats()
}
