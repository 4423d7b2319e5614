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
