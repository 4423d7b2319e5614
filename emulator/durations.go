package emulator

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// ParseDurations parses a per-model duration flag such as emulate's or
// simulate's --turnaround, named name in its errors: comma-separated
// ranges, each a duration ("5s") or a uniform range ("2s-6s"), the first
// for every model unless it is a model=range pair, the pairs for the
// models they name ("2s-6s,claude-opus-4-6=30s-90s"). Models no range
// names take 2s-6s. The function it returns draws a duration for a model
// from r only.
func ParseDurations(name, s string) (func(model string, r *rand.Rand) time.Duration, error) {
	type span struct{ lo, hi time.Duration }
	def := span{2 * time.Second, 6 * time.Second}
	perModel := map[string]span{}
	for i, part := range strings.Split(s, ",") {
		model, rng, isPair := strings.Cut(part, "=")
		if !isPair {
			if i > 0 {
				return nil, fmt.Errorf("%s: %q: only the first range may be for every model; name the model of the others (model=range)", name, part)
			}
			rng, model = part, ""
		}
		model = strings.TrimSpace(model)
		if isPair && model == "" {
			return nil, fmt.Errorf("%s: %q names no model", name, part)
		}
		lo, hi, err := parseDuration(name, rng)
		if err != nil {
			return nil, err
		}
		if isPair {
			perModel[model] = span{lo, hi}
		} else {
			def = span{lo, hi}
		}
	}
	return func(model string, r *rand.Rand) time.Duration {
		sp, ok := perModel[model]
		if !ok {
			sp = def
		}
		if sp.hi > sp.lo {
			return sp.lo + time.Duration(r.Int64N(int64(sp.hi-sp.lo)+1))
		}
		return sp.lo
	}, nil
}

// parseDuration parses "5s" or "2s-6s".
func parseDuration(name, s string) (lo, hi time.Duration, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = time.ParseDuration(strings.TrimSpace(a)); err != nil {
		return 0, 0, fmt.Errorf("%s: %v", name, err)
	}
	hi = lo
	if isRange {
		if hi, err = time.ParseDuration(strings.TrimSpace(b)); err != nil {
			return 0, 0, fmt.Errorf("%s: %v", name, err)
		}
	}
	if lo < 0 || hi < lo {
		return 0, 0, fmt.Errorf("%s: %q is not a duration or a range lo-hi", name, s)
	}
	return lo, hi, nil
}
