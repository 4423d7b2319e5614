package dispatch

import (
	"slices"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// predictor learns a latency (batch turnarounds, or sync call latencies)
// per provider and model from what it observes. Until a model has a
// sample it predicts the model's prior; from the first sample on, it
// predicts from the samples alone (the prior is an assumption, the
// samples a measurement), as a quantile with linear interpolation, so
// that a few samples do not make every high quantile their maximum.
type predictor struct {
	prior    time.Duration            // the prior of a model without one of its own
	priors   map[string]time.Duration // by model
	quantile float64                  // the quantile predict returns
	keep     int                      // samples kept per provider and model

	mu        sync.Mutex
	samples   map[string][]time.Duration // ring of recent observations, oldest first
	sorted    map[string][]time.Duration // samples sorted, built when first read
	exploring map[string]bool            // a batch is out to learn a model without samples
}

func newPredictor(prior time.Duration, priors map[string]time.Duration, quantile float64, keep int) *predictor {
	return &predictor{prior: prior, priors: priors, quantile: quantile, keep: keep,
		samples: map[string][]time.Duration{}, sorted: map[string][]time.Duration{}, exploring: map[string]bool{}}
}

func predictorKey(provider, model string) string { return provider + "\x00" + model }

// observe records one observation.
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
	delete(p.sorted, k)
	delete(p.exploring, k)
}

// predict returns the predictor's quantile for a model.
func (p *predictor) predict(provider, model string) time.Duration {
	return p.at(provider, model, p.quantile)
}

// at returns quantile q of a model's samples, or its prior if it has
// none.
func (p *predictor) at(provider, model string, q float64) time.Duration {
	k := predictorKey(provider, model)
	p.mu.Lock()
	s, ok := p.sorted[k]
	if !ok && len(p.samples[k]) > 0 {
		s = slices.Clone(p.samples[k])
		slices.Sort(s)
		p.sorted[k] = s // never changed: observe replaces it
	}
	p.mu.Unlock()
	if len(s) == 0 {
		if d, ok := p.priors[model]; ok {
			return d
		}
		return p.prior
	}
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	frac := pos - float64(i)
	return s[i] + time.Duration(frac*float64(s[i+1]-s[i]))
}

// atCensored is at with the ages of the model's batches still in flight
// counted as well: each is a turnaround known to be at least that long, so
// one older than the estimate counts as a sample of its age. Without it
// the first turnarounds learned are the short ones (the long ones are not
// back yet), and the estimate is low just when it matters.
func (p *predictor) atCensored(provider, model string, q float64, ages []time.Duration) time.Duration {
	est := p.at(provider, model, q)
	k := predictorKey(provider, model)
	p.mu.Lock()
	s := p.sorted[k]
	p.mu.Unlock()
	var longer []time.Duration
	for _, a := range ages {
		if a > est {
			longer = append(longer, a)
		}
	}
	if len(longer) == 0 || len(s) == 0 {
		return est
	}
	all := append(slices.Clone(s), longer...)
	slices.Sort(all)
	pos := q * float64(len(all)-1)
	i := int(pos)
	if i >= len(all)-1 {
		return all[len(all)-1]
	}
	return all[i] + time.Duration((pos-float64(i))*float64(all[i+1]-all[i]))
}

// explore reports whether a model has no sample and no batch out to get
// one, and if so marks one as out: a model whose prior is too high for
// any budget would otherwise never get a batch to learn from. A rescue
// keeps the explored request's budget.
func (p *predictor) explore(provider, model string) bool {
	k := predictorKey(provider, model)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.samples[k]) > 0 || p.exploring[k] {
		return false
	}
	p.exploring[k] = true
	return true
}

// unexplore gives up an exploration that did not go out.
func (p *predictor) unexplore(provider, model string) {
	p.mu.Lock()
	delete(p.exploring, predictorKey(provider, model))
	p.mu.Unlock()
}

// load replaces the samples of each provider and model in samples (oldest
// first) with theirs: what a fleet's store holds, every replica's
// observations.
func (p *predictor) load(samples []llmfleet.TurnaroundSample) {
	fresh := map[string][]time.Duration{}
	for _, s := range samples {
		if s.Turnaround >= 0 {
			k := predictorKey(s.Provider, s.Model)
			fresh[k] = append(fresh[k], s.Turnaround)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, s := range fresh {
		if len(s) > p.keep {
			s = s[len(s)-p.keep:]
		}
		p.samples[k] = s
		delete(p.sorted, k)
		delete(p.exploring, k)
	}
}

// has reports whether a model has a sample.
func (p *predictor) has(provider, model string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.samples[predictorKey(provider, model)]) > 0
}

// lateShare returns the share of a model's samples over avail: the
// probability that a batch of it comes too late for a budget leaving
// avail. The ages of its batches in flight (ages) count as well, as in
// atCensored: one older than avail is a turnaround known to be over it,
// so that the first samples, the short turnarounds back first, do not
// make a tight budget look safe. Without either: 0.5 if its prior is
// over avail, else 0.1.
func (p *predictor) lateShare(provider, model string, avail time.Duration, ages []time.Duration) float64 {
	k := predictorKey(provider, model)
	p.mu.Lock()
	s := p.samples[k]
	n, all := 0, len(s)
	for _, v := range s {
		if v > avail {
			n++
		}
	}
	p.mu.Unlock()
	for _, a := range ages {
		if a > avail {
			n++
			all++
		}
	}
	if all == 0 {
		if p.at(provider, model, 0.5) > avail {
			return 0.5
		}
		return 0.1
	}
	return (float64(n) + 0.5) / (float64(all) + 1)
}
