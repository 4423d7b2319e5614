package postgres

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
