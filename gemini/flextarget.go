package gemini

import "time"

// FlexTarget is the longest a flex call takes by the API's target: it is
// served within 1 to 15 minutes (or shed).
const FlexTarget = 15 * time.Minute

// FlexUpstreamTimeout is the shortest upstream timeout
// (dispatch.Policy.UpstreamTimeout, serve's --upstream-timeout) of a fleet
// that routes Gemini flex calls: FlexTarget and a margin. The dispatcher
// bounds every call it sends synchronously by one timeout, whatever its
// provider and tier; its default, 10 minutes, would cut the slower flex
// calls after the provider may have billed them, and fail them though
// their budgets had time left.
const FlexUpstreamTimeout = 20 * time.Minute

// UpstreamTimeout returns the upstream timeout of a fleet that routes
// Gemini flex calls, given the one configured: at least
// FlexUpstreamTimeout, unless it is off (0 or negative, returned as is).
func UpstreamTimeout(configured time.Duration) time.Duration {
	if configured <= 0 {
		return configured
	}
	return max(configured, FlexUpstreamTimeout)
}
