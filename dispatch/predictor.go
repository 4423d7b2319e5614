package dispatch

import (
	"slices"
	"sync"
	"time"
)

// predictor learns batch turnarounds per provider and model.
type predictor struct {
	prior    time.Duration
	quantile float64
	keep     int

	mu      sync.Mutex
	samples map[string][]time.Duration // ring of recent turnarounds, oldest first
}

// minSamples is how many observations it takes before the prior stops
// counting as one of the samples.
const minSamples = 5

func newPredictor(p Policy) *predictor {
	return &predictor{prior: p.TurnaroundPrior, quantile: p.TurnaroundQuantile, keep: p.TurnaroundSamples, samples: map[string][]time.Duration{}}
}

func predictorKey(provider, model string) string { return provider + "\x00" + model }

// observe records one turnaround.
func (p *predictor) observe(provider, model string, d time.Duration) {
	if d < 0 {
		return
	}
	k := predictorKey(provider, model)
	p.mu.Lock()
	defer p.mu.Unlock()
	s := append(p.samples[k], d)
	if len(s) > p.keep {
		s = s[len(s)-p.keep:]
	}
	p.samples[k] = s
}

// predict returns the predicted turnaround: the configured quantile of the
// recent observations, with the prior counted as one more sample until
// minSamples have been seen.
func (p *predictor) predict(provider, model string) time.Duration {
	p.mu.Lock()
	s := slices.Clone(p.samples[predictorKey(provider, model)])
	p.mu.Unlock()
	if len(s) < minSamples {
		s = append(s, p.prior)
	}
	slices.Sort(s)
	i := int(float64(len(s))*p.quantile+0.999999) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}
