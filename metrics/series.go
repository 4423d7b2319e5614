package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// maxSeriesSets bounds the route and model pairs whose series a
// seriesCache keeps resolved; past it, series are looked up every time.
const maxSeriesSets = 4096

// tokenKinds are the values of llmfleet_tokens_total's kind label, in the
// order of routeModel.tokens.
var tokenKinds = [...]string{"input", "output", "cache_write_5m", "cache_write_1h", "cache_read"}

// routeModel names the series of one route and model label pair.
type routeModel struct{ route, model string }

// routeSeries holds the series of one route and model, resolved from
// their vectors the first time each is used (so that a series still
// appears only once it counts something), instead of hashing their label
// values on every Observe.
type routeSeries struct {
	mu       sync.Mutex
	outcomes map[string]prometheus.Counter // llmfleet_requests_total by outcome
	tokens   [len(tokenKinds)]prometheus.Counter
	cost     prometheus.Counter
	miss     prometheus.Counter
	duration prometheus.Observer
}

// seriesCache keeps the routeSeries of the route and model pairs seen.
// The zero value is ready.
type seriesCache struct {
	mu   sync.RWMutex
	sets map[routeModel]*routeSeries
}

// of returns the series of route and model; nil once the cache is full
// and the pair is not in it.
func (c *seriesCache) of(route, model string) *routeSeries {
	k := routeModel{route, model}
	c.mu.RLock()
	s := c.sets[k]
	c.mu.RUnlock()
	if s != nil {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s = c.sets[k]; s != nil {
		return s
	}
	if len(c.sets) >= maxSeriesSets {
		return nil
	}
	if c.sets == nil {
		c.sets = make(map[routeModel]*routeSeries)
	}
	s = &routeSeries{}
	c.sets[k] = s
	return s
}

// counter returns *slot, resolving it first with vec and the label
// values route, model and, unless empty, kind.
func (s *routeSeries) counter(slot *prometheus.Counter, vec *prometheus.CounterVec, route, model, kind string) prometheus.Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *slot == nil {
		if kind == "" {
			*slot = vec.WithLabelValues(route, model)
		} else {
			*slot = vec.WithLabelValues(route, model, kind)
		}
	}
	return *slot
}

// request returns the llmfleet_requests_total counter of an outcome.
func (s *routeSeries) request(vec *prometheus.CounterVec, route, model, outcome string) prometheus.Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.outcomes[outcome]
	if c == nil {
		c = vec.WithLabelValues(route, model, outcome)
		if s.outcomes == nil {
			s.outcomes = make(map[string]prometheus.Counter)
		}
		if len(s.outcomes) < maxLabelValues {
			s.outcomes[outcome] = c
		}
	}
	return c
}

// observer returns the llmfleet_request_duration_seconds observer of the
// route.
func (s *routeSeries) observer(vec *prometheus.HistogramVec, route string) prometheus.Observer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.duration == nil {
		s.duration = vec.WithLabelValues(route)
	}
	return s.duration
}
