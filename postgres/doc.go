// Package postgres is llmfleet's Store on PostgreSQL (driver pgx), for a
// fleet whose state several processes share: the requests accepted for
// batching, the batches, their results, the sealed credentials, the cost
// ledger, the turnaround samples and the owners of batches made through
// the pass-through APIs. It passes the storetest suite as the SQLite store
// does, with the same column encoding (package storecodec).
//
// Open applies the embedded migrations under an advisory lock, so that
// several processes starting at once on a fresh database migrate it once.
// A URL's search_path parameter (postgres://…/db?search_path=fleet_a)
// puts a fleet's tables in a schema of their own, created if missing.
//
// Unlike the SQLite store, it does not hold its data exclusively: several
// processes may open it. What they may do together is the engine's
// concern (see issue 12's claiming and leases); the store's own guarantees
// (a request is completed once, with one ledger entry) hold across them,
// by row locks and conditional updates.
package postgres
