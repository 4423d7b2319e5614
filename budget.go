package llmfleet

import (
	"context"
	"time"
)

type budgetKey struct{}

// WithBudget returns a context that carries a latency budget: how long the
// caller is willing to wait for the answer of the requests made with it.
// The SDK middleware routes requests by it.
func WithBudget(ctx context.Context, budget time.Duration) context.Context {
	return context.WithValue(ctx, budgetKey{}, budget)
}

// BudgetFrom returns the latency budget carried by ctx, if any.
func BudgetFrom(ctx context.Context) (time.Duration, bool) {
	b, ok := ctx.Value(budgetKey{}).(time.Duration)
	return b, ok
}
