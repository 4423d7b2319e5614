package llmfleet

// CacheWrites returns the tokens written to the prompt cache, split by TTL.
// It uses the cache_creation split when the provider sent one; tokens of
// cache_creation_input_tokens that the split does not account for (all of
// them when there is no split) count as 5-minute writes, the default TTL.
// Pricing, the ledger and the metrics all count cache writes this way.
func (u Usage) CacheWrites() (fiveMin, oneHour int64) {
	fiveMin = u.CacheCreation.Ephemeral5mInputTokens
	oneHour = u.CacheCreation.Ephemeral1hInputTokens
	if rest := u.CacheCreationInputTokens - fiveMin - oneHour; rest > 0 {
		fiveMin += rest
	}
	return fiveMin, oneHour
}

// EstimatedUsage is llmfleet's estimate of the usage of a call cut before
// the provider reported any (LedgerEntry.Estimated), from the size of its
// request body: input tokens about a quarter of its bytes, no output (none
// was seen). The provider may bill such a call all the same; the estimate
// puts its input in the ledger.
func EstimatedUsage(bodyBytes int64) Usage {
	return Usage{InputTokens: (max(bodyBytes, 0) + 3) / 4}
}
