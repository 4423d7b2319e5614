// Package postgres is llmfleet's Store on PostgreSQL (driver pgx), for a
// fleet whose state several processes share: the requests accepted for
// batching, the batches, their results, the sealed credentials, the cost
// ledger, the turnaround samples, the prompt-cache statistics and prefix
// states, and the owners of batches made through the pass-through APIs.
// It passes the storetest suite as the SQLite store
// does, with the same column encoding (package storecodec) and the same
// core (package sqlstore), whose many-row writes it makes one statement
// over arrays (unnest).
//
// Open applies the embedded migrations under an advisory lock, so that
// several processes starting at once on a fresh database migrate it once.
// A URL's search_path parameter (postgres://…/db?search_path=fleet_a)
// puts a fleet's tables in a schema of their own, created if missing.
//
// Unlike the SQLite store, it does not hold its data exclusively: it is
// an llmfleet.SharedStore, the state of a fleet of replicas. Each DB is a
// run of a named replica (DB.Replica; an advisory lock keeps two live
// processes off one name) with a lease in the replicas table, renewed by
// Heartbeat. Queued requests and batches in flight have an owner; Claim
// moves a pool's queued requests, whichever replica accepted them, into a
// batch intent of its own (SELECT … FOR UPDATE SKIP LOCKED, one
// transaction); Adopt takes what runs whose lease ended owned;
// CompleteRequests announces the requests it completed with NOTIFY, and
// Watch LISTENs. The store's own guarantees (a request is completed once,
// with one ledger entry; an intent another run recorded created is not
// requeued) hold across processes by row locks and conditional updates;
// prompt-cache counts are added in their rows' locks (an upsert that
// increments), so that replicas adding at once lose none.
package postgres
