// Package httpretry is the one retry of the provider adapters' HTTP calls
// (claude, openai, gemini) and of the proxy's sync calls: the wait an
// answer's Retry-After asks for (RetryAfter), the backoff when it asks
// none (Backoff: half a second doubling to 8 s, less up to a quarter),
// and the attempt loop (Do) that each adapter drives with its own rules:
// what one attempt is and whether its error may be retried (Try), how
// many retries (Loop.MaxRetries) and whether the context's deadline
// bounds the waits (Loop.Bounded). The rules shared by several providers
// are here as small functions (ShouldRetry, RetryableStatus, Unanswered);
// the rest stay in the adapter. It knows no provider's wire format.
package httpretry
