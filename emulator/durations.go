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
// from r only, uniformly from the model's range (see DrawUniform).
func ParseDurations(name, s string) (func(model string, r *rand.Rand) time.Duration, error) {
	ranges, err := ParseRanges(name, s)
	if err != nil {
		return nil, err
	}
	return func(model string, r *rand.Rand) time.Duration {
		lo, hi := ranges(model)
		return DrawUniform(lo, hi, r)
	}, nil
}

// DrawUniform draws a duration from [lo, hi] uniformly, from r only (lo
// itself, drawing nothing, when hi is not above lo).
func DrawUniform(lo, hi time.Duration, r *rand.Rand) time.Duration {
	if hi > lo {
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
	return lo
}

// ParseRanges parses a flag as ParseDurations does, and returns each
// model's range instead of drawing from it.
func ParseRanges(name, s string) (func(model string) (lo, hi time.Duration), error) {
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
	return func(model string) (lo, hi time.Duration) {
		sp, ok := perModel[model]
		if !ok {
			sp = def
		}
		return sp.lo, sp.hi
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
