// Package pricing prices the token usage of model calls.
//
// A Table holds, per provider and model, the list prices in USD per million
// tokens of each token kind (uncached input, output, 5-minute and 1-hour
// cache writes, cache reads) and the multiplier of the batch route. Cache
// prices are per model: given, or derived from the input price by the
// model's cache multipliers, else its provider's. Default returns the table
// embedded in the binary (prices.yaml); Merge overrides or extends it from
// a YAML or JSON document of the same shape, and Override does so from the
// pricing section of the config file.
//
// Real answers name a model by its dated id (claude-haiku-4-5-20251001 for
// a request of claude-haiku-4-5): Lookup prices both alike, and Canonical
// gives the one name per-model figures should be kept under.
//
// The batch discount applies to every token kind and stacks with the cache
// multipliers: with Anthropic's 50% discount, a batched 1-hour cache write
// costs 1.0 times the base input price, a 5-minute write 0.625 times and a
// cache read 0.05 times.
//
// Costs are computed exactly, in whole pico-dollars (1e-12 USD, the
// resolution of a price given per million tokens to the micro-dollar), and
// converted to float64 dollars once.
//
// A model the table does not know is not priced: Cost reports priced false
// and a cost of 0, and callers count its tokens and flag it.
package pricing
