package dispatch

import "time"

// Policy holds the dispatcher's knobs. The zero value of every field means
// its default.
type Policy struct {
	// SyncMaxLatency is the largest budget that always goes sync. Default 5s.
	SyncMaxLatency time.Duration
	// BatchWindow is the longest a request waits in a pool. Default 30s.
	BatchWindow time.Duration
	// BatchMinSize is the pool size at which a pool goes out at once.
	// Default 10.
	BatchMinSize int
	// BatchMaxSize is the most requests one batch holds, further capped by
	// the provider's own limits. Default 100.
	BatchMaxSize int
	// PollInterval is the shortest interval between two polls of one
	// credential's batches. Default 5s.
	PollInterval time.Duration
	// MaxPollInterval caps the interval between two polls of a batch whose
	// expected (or, once late, actual) age is under ten times it; an older
	// batch is polled at most every tenth of its age, so that a batch of
	// hours costs tens of calls, not hundreds. Default 30s.
	MaxPollInterval time.Duration
	// TurnaroundPrior is the predicted batch turnaround before any has been
	// observed. Default 120s.
	TurnaroundPrior time.Duration
	// TurnaroundQuantile is the quantile of the observed turnarounds used as
	// the prediction. Default 0.9.
	TurnaroundQuantile float64
	// TurnaroundSamples is how many recent turnarounds are remembered per
	// provider and model. Default 64.
	TurnaroundSamples int
	// CreateTimeout bounds one batch create call. Default 2m.
	CreateTimeout time.Duration
}

func (p Policy) withDefaults() Policy {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&p.SyncMaxLatency, 5*time.Second)
	def(&p.BatchWindow, 30*time.Second)
	def(&p.PollInterval, 5*time.Second)
	def(&p.MaxPollInterval, 30*time.Second)
	def(&p.TurnaroundPrior, 120*time.Second)
	def(&p.CreateTimeout, 2*time.Minute)
	if p.MaxPollInterval < p.PollInterval {
		p.MaxPollInterval = p.PollInterval
	}
	if p.BatchMinSize <= 0 {
		p.BatchMinSize = 10
	}
	if p.BatchMaxSize <= 0 {
		p.BatchMaxSize = 100
	}
	if p.BatchMinSize > p.BatchMaxSize {
		p.BatchMinSize = p.BatchMaxSize
	}
	if p.TurnaroundQuantile <= 0 || p.TurnaroundQuantile > 1 {
		p.TurnaroundQuantile = 0.9
	}
	if p.TurnaroundSamples <= 0 {
		p.TurnaroundSamples = 64
	}
	return p
}

// slack is the delivery margin added to a predicted turnaround: a finished
// batch is seen at most one poll interval late, and fetching results takes
// a moment more.
func (p Policy) slack() time.Duration { return 2 * p.PollInterval }
