// Package sqlstore is the core the SQL stores (packages sqlite and
// postgres) share: the llmfleet.Store methods whose SQL is the same on
// both databases, written once over database/sql, and the group commit of
// AddRequest. A store opens its database, describes in a Dialect what its
// SQL does differently, and embeds the Store that Open returns for its
// methods; it keeps only what is its own: its locks, migrations and
// connection settings, the statements that write many rows at once (one
// prepared statement a row on SQLite, arrays in one statement on
// PostgreSQL), and, on PostgreSQL, the fleet's leases and notifications.
//
// # Statements
//
// The core's statements are written with ? placeholders; a Dialect with
// Numbered set has them rewritten as $1, $2, … The columns are encoded as
// package storecodec says, on both databases alike.
//
// # Group commit
//
// AddRequest hands its request to the Conn's committer, whose workers
// (Dialect.Workers) each take the calls waiting, up to Dialect.MaxGroup,
// and insert them together (Dialect.Insert), in one transaction: one
// commit, and one wait for the disk, for many requests. A call whose
// context ends before its group is taken is dropped from it, and not
// stored. A call whose context ends while its group is being inserted
// waits for the outcome, unless the Dialect can cancel the insert on the
// server (Dialect.Canceled): the insert is then canceled, the call
// answered with its context's error, and the rest of the group inserted
// again. An insert whose answer was lost may have committed: a Dialect
// that can tell (Dialect.Committed) has the group answered as it was
// stored. Close answers every call handed over before it returns.
package sqlstore
