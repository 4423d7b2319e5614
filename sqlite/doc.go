// Package sqlite is llmfleet's default durable state: an llmfleet.Store in
// one embedded SQLite database file.
//
// # Driver
//
// It uses modernc.org/sqlite, SQLite translated to pure Go, rather than a
// cgo binding such as mattn/go-sqlite3. llmfleet ships as one static
// binary that cross-compiles with GOOS/GOARCH alone, and its CI and
// contributors need no C toolchain. The cost is speed, about half that of
// the C library on write-heavy loads, which group commit more than makes
// up for: the durable path is bounded by fsync, not by SQL.
//
// # Durability
//
// The database runs in WAL mode with synchronous=FULL, foreign keys on and
// a busy timeout. Every write method returns only once its transaction is
// committed and the WAL fsynced, so what it wrote survives a SIGKILL of
// the process and a power loss alike. (synchronous=NORMAL, settable with
// DB.Synchronous, would still survive a crash of the process, since a
// commit is in the operating system's cache once written, but could lose
// the last commits on a power loss: too weak for a record that a batch
// was paid for.)
//
// One connection writes; a small pool reads, and in WAL mode readers never
// wait for the writer. AddRequest calls are committed in groups (the group
// committer of package sqlstore, the core the SQL stores share): one
// goroutine, started by Open and stopped by Close, takes every call
// waiting, inserts them in one transaction and pays one fsync for all;
// each caller returns once its own row is durable.
//
// # Throughput
//
// BenchmarkAddRequest measures requests accepted per second on the durable
// path, with 1.5 KB bodies, each AddRequest returning once its row is
// committed and fsynced. On a 2-core virtual machine (ext4 on virtio,
// shared with other work): about 2,500 requests/s with a single caller,
// 14,000/s with 16 concurrent callers and 31,000/s with 128
// (37,000/s with synchronous=NORMAL). Run it with
//
//	go test -run '^$' -bench AddRequest ./sqlite
//
// # One process at a time
//
// Two llmfleet processes on one database would each pick up the other's
// pending batches. Open therefore takes an exclusive flock(2) on the
// sidecar file <Path>.lock (0600), and writes its pid there; while it is
// held, by another process or another DB of the same one, Open fails with
// an error wrapping llmfleet.ErrLocked that names that pid. Close
// releases it, and so does the kernel when the process ends, even by
// SIGKILL, so a crash never leaves a stale lock. The lock file is left in
// place. Systems without flock (Windows among them) take no lock.
//
// # Schema
//
// Migrations are SQL files embedded in the binary (migrations/NNNN_*.sql),
// applied in order on Open in one transaction; PRAGMA user_version records
// the schema version. A database from a newer llmfleet is refused.
//
// Results are typed (llmfleet.StoredResult with its ResultError): the
// error as JSON in one column, the answer or the error's envelope byte
// for byte in another. Results stored before schema 3 had no error
// column, only the status and the body the synchronous API answered; one
// with a status other than 200 is read as a provider error
// (llmfleet.KindProvider) with that status and the body as its envelope.
//
// New files are created 0600 in a 0700 directory: they hold prompts and
// answers. Credentials are stored only as the sealed bytes the caller
// gives (see package vault); the store never sees a secret.
package sqlite
