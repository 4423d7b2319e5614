// Package claudewire holds the few facts of the Anthropic Messages API's
// wire format that several of llmfleet's packages share: the error
// envelope, the status each error type is sent with, and the fields of a
// Message that llmfleet reads. The Anthropic adapter (claude) parses with
// it, the proxy renders with it, and the emulator stands in for the API
// with it; the root package, which is provider-neutral, does not know it.
package claudewire
