package llmfleet

import "time"

// TierTimeouts is an optional interface of a Provider one of whose tiers
// may take longer to answer than a fleet's upstream timeout allows
// (dispatch.Policy.UpstreamTimeout, serve's --upstream-timeout): Gemini's
// flex tier serves a call within 1 to 15 minutes, and a call cut before
// it is answered may be billed all the same.
type TierTimeouts interface {
	// UpstreamTimeout returns the shortest upstream timeout a call served
	// in tier may be given without being cut while the provider is still
	// within its own target; 0 when the tier asks for none of its own.
	UpstreamTimeout(tier Tier) time.Duration
}

// UpstreamTimeout returns the upstream timeout of a call of p in tier,
// given the one configured: the longer of the two when p states one for
// the tier (TierTimeouts), else the configured one. A configured timeout
// of 0 or less (none) is returned as it is.
func UpstreamTimeout(p Provider, tier Tier, configured time.Duration) time.Duration {
	if configured <= 0 {
		return configured
	}
	if tt, ok := p.(TierTimeouts); ok {
		return max(configured, tt.UpstreamTimeout(tier))
	}
	return configured
}
