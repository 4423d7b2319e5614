// Package llmfleet is the vocabulary of llmfleet: the domain types, the
// interfaces that adapters implement (Provider, Submitter, Clock) and the
// errors they share.
//
// llmfleet pools the requests of a fleet of agents into provider batch jobs,
// which cost half as much as the synchronous endpoints, and routes each
// request by its latency budget either to the synchronous endpoint or into
// the pool. The engine lives in package dispatch, the Anthropic adapter in
// package claude, the provider emulator in package emulator, the HTTP
// proxy in package proxy and the cost ledger, metrics and dashboard
// pipeline in package observe; cmd/llmfleet wires them together.
package llmfleet
