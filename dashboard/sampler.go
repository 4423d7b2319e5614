package dashboard

import (
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// DefaultSampleInterval is how often a Sampler samples by default.
const DefaultSampleInterval = 5 * time.Second

// Sampler samples the dispatcher's queue depth and batches in flight into
// a History at a steady interval, whether a dashboard page is open or
// not, so that the queue chart shows what happened while nobody looked
// (and a period without samples, such as the process being down, shows
// as a gap). Open starts it, Close stops it; set its fields before Open.
type Sampler struct {
	// History receives the samples; required.
	History *History
	// Stats returns the dispatcher's counters; nil samples zeros.
	Stats func() llmfleet.Stats
	// Interval is the time between samples; 0 means
	// DefaultSampleInterval.
	Interval time.Duration
	// Clock times the samples; nil means the real clock.
	Clock llmfleet.Clock

	mu      sync.Mutex
	clock   llmfleet.Clock
	timer   llmfleet.Timer
	running sync.WaitGroup
	open    bool
}

// Open takes a first sample and starts sampling. Opening an open Sampler
// does nothing.
func (s *Sampler) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open || s.History == nil {
		return nil
	}
	s.clock = s.Clock
	if s.clock == nil {
		s.clock = llmfleet.RealClock{}
	}
	s.open = true
	s.sample()
	s.schedule()
	return nil
}

// Close stops sampling and waits for a sample under way. Closing a closed
// Sampler does nothing.
func (s *Sampler) Close() error {
	s.mu.Lock()
	if s.open {
		s.open = false
		if s.timer != nil && s.timer.Stop() {
			s.running.Done() // its tick will not run
		}
	}
	s.mu.Unlock()
	s.running.Wait()
	return nil
}

func (s *Sampler) interval() time.Duration {
	if s.Interval > 0 {
		return s.Interval
	}
	return DefaultSampleInterval
}

// schedule arms the timer of the next sample; s.mu is held.
func (s *Sampler) schedule() {
	s.running.Add(1)
	s.timer = s.clock.AfterFunc(s.interval(), s.tick)
}

func (s *Sampler) tick() {
	defer s.running.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return
	}
	s.sample()
	s.schedule()
}

// sample records one sample; s.mu is held.
func (s *Sampler) sample() {
	var st llmfleet.Stats
	if s.Stats != nil {
		st = s.Stats()
	}
	s.History.SampleQueue(s.clock.Now(), st.QueueDepth, st.BatchesInFlight)
}
