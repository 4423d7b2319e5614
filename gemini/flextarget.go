package gemini

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

// FlexTarget is the longest a flex call takes by the API's target: it is
// served within 1 to 15 minutes (or shed).
const FlexTarget = 15 * time.Minute

// FlexUpstreamTimeout is the upstream timeout the Provider states for its
// flex tier (llmfleet.TierTimeouts): FlexTarget and a margin. A fleet's
// upstream timeout (dispatch.Policy.UpstreamTimeout, serve's
// --upstream-timeout), 10 minutes by default, would cut the slower flex
// calls after the provider may have billed them, and fail them though
// their budgets had time left; a flex call is bounded by the longer of
// the two.
const FlexUpstreamTimeout = 20 * time.Minute

var _ llmfleet.TierTimeouts = (*Provider)(nil)

// UpstreamTimeout returns FlexUpstreamTimeout for the flex tier, 0 (none
// of its own) for the others.
func (p *Provider) UpstreamTimeout(tier llmfleet.Tier) time.Duration {
	if tier == llmfleet.TierFlex {
		return FlexUpstreamTimeout
	}
	return 0
}
