package simulate

import (
	"sort"
	"time"
)

// delays is a discretized distribution of a delay: weighted points,
// sorted, with their cumulative weights (the last is 1).
type delays struct {
	at  []float64 // nanoseconds, ascending
	cum []float64 // cum[i]: the weight of at[0..i]
}

// quantiles is how many points a uniform range is discretized into.
const quantiles = 24

// uniformDelays discretizes the uniform distribution over [lo, hi] at the
// midpoints of its quantiles times factor, each of weight w.
func uniformDelays(lo, hi time.Duration, factor, w float64) (at, weight []float64) {
	for i := range quantiles {
		f := (float64(i) + 0.5) / quantiles
		at = append(at, factor*(float64(lo)+f*float64(hi-lo)))
		weight = append(weight, w/quantiles)
	}
	return at, weight
}

// newDelays sorts weighted points into a distribution.
func newDelays(at, weight []float64) delays {
	idx := make([]int, len(at))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return at[idx[i]] < at[idx[j]] })
	d := delays{at: make([]float64, len(at)), cum: make([]float64, len(at))}
	sum := 0.0
	for k, i := range idx {
		sum += weight[i]
		d.at[k], d.cum[k] = at[i], sum
	}
	for k := range d.cum {
		d.cum[k] /= sum
	}
	return d
}

// rangeDelays is the distribution of a delay uniform over [lo, hi].
func rangeDelays(lo, hi time.Duration) delays {
	return newDelays(uniformDelays(lo, hi, 1, 1))
}

// runDelays is the distribution of the time a batch request runs after
// its batch's creation: U·T, U uniform over [0, 1] and T the batch's
// turnaround, uniform over [lo, hi] and s.Factor times longer with
// probability s.Fraction. (1−U)·T, the time from its run to its batch's
// end, has the same distribution.
func runDelays(lo, hi time.Duration, s Straggler) delays {
	f := min(max(s.Fraction, 0), 1)
	ts, tw := uniformDelays(lo, hi, 1, 1-f)
	if f > 0 {
		sa, sw := uniformDelays(lo, hi, s.Factor, f)
		ts, tw = append(ts, sa...), append(tw, sw...)
	}
	var at, weight []float64
	for i := range quantiles {
		u := (float64(i) + 0.5) / quantiles
		for k, t := range ts {
			at = append(at, u*t)
			weight = append(weight, tw[k]/quantiles)
		}
	}
	return newDelays(at, weight)
}

// below returns P(X < x).
func (d delays) below(x float64) float64 {
	k := sort.SearchFloat64s(d.at, x) // the first at >= x
	if k == 0 {
		return 0
	}
	return d.cum[k-1]
}

// sumBelow returns P(A + X < x) for A of distribution a (nil: 0) and X
// of d, independent.
func (d delays) sumBelow(a *delays, x float64) float64 {
	if a == nil {
		return d.below(x)
	}
	p, prev := 0.0, 0.0
	for i, v := range a.at {
		p += (a.cum[i] - prev) * d.below(x-v)
		prev = a.cum[i]
	}
	return p
}
