// Package pricing prices the token usage of model calls.
//
// A Table holds, per provider and model, the list prices in USD per million
// tokens of each token kind (uncached input, output, 5-minute and 1-hour
// cache writes, cache reads) and the multiplier of the batch route. Default
// returns the table embedded in the binary (prices.yaml); Merge overrides
// or extends it from a YAML or JSON document of the same shape, typically
// the pricing section of the config file.
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
