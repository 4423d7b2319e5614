package emulator

import (
	"maps"
	"slices"

	"github.com/llmfleet/llmfleet"
)

// StatsPath is the path of the emulator's own statistics endpoint, which
// the real API does not have: GET /emulator/v1/stats answers the Stats as
// JSON, without authentication.
const StatsPath = "/emulator/v1/stats"

// Stats are the emulator's observations, for tests.
type Stats struct {
	// Calls counts the HTTP requests received per endpoint (one of the
	// Endpoint* names), including those that failed or met a fault.
	Calls map[string]int `json:"calls"`
	// Submissions lists every request ever submitted in a created batch,
	// in order of submission (a late create's, once it has landed).
	Submissions []Submission `json:"submissions"`
	// Batches holds per-batch counters, by batch id.
	Batches map[string]BatchStats `json:"batches"`
	// FaultsFired counts the injected faults used.
	FaultsFired int `json:"faults_fired"`
	// Bills lists every answer the provider would bill, in order: each
	// sync message answered 200 (streamed or not, whether or not its
	// client read it to the end) and each batch request that succeeded,
	// when its batch ended.
	Bills []Bill `json:"bills"`
}

// Bill is one answer the provider would bill.
type Bill struct {
	// Batch tells a batch request's result from a sync answer.
	Batch bool `json:"batch"`
	// Model is the model asked for.
	Model string `json:"model"`
	// Text is the text of the request's last user message.
	Text string `json:"text,omitempty"`
	// Usage is the usage the answer reported.
	Usage llmfleet.Usage `json:"usage"`
}

// billOf returns the Bill of an answer with usage u.
func billOf(batch bool, p *params, u usageJSON) Bill {
	b := Bill{Batch: batch, Model: p.model, Text: p.lastUserText()}
	b.Usage.InputTokens, b.Usage.OutputTokens = u.InputTokens, u.OutputTokens
	b.Usage.CacheCreationInputTokens, b.Usage.CacheReadInputTokens = u.CacheCreationInputTokens, u.CacheReadInputTokens
	b.Usage.CacheCreation.Ephemeral5mInputTokens = u.CacheCreation.Ephemeral5m
	b.Usage.CacheCreation.Ephemeral1hInputTokens = u.CacheCreation.Ephemeral1h
	return b
}

// Submission is one request submitted in a batch.
type Submission struct {
	BatchID  string `json:"batch_id"`
	CustomID string `json:"custom_id"`
	// ParamsHash is the hex SHA-256 of the compacted params JSON.
	ParamsHash string `json:"params_hash"`
	// Text is the text of the last user message of the params (as the
	// reply quotes it), or "" when the params are invalid.
	Text string `json:"text,omitempty"`
}

// contentKey identifies what a submission asks for, whatever its custom_id
// and batch: its Text, or "params:" and its ParamsHash when it has none.
func (sub Submission) contentKey() string {
	if sub.Text != "" {
		return sub.Text
	}
	return "params:" + sub.ParamsHash
}

// BatchStats counts the calls made about one batch.
type BatchStats struct {
	// Requests is the number of requests in the batch.
	Requests int `json:"requests"`
	// Retrieves, Results, Cancels and Deletes count the calls to those
	// endpoints for this batch (including failed ones).
	Retrieves int `json:"retrieves"`
	Results   int `json:"results"`
	Cancels   int `json:"cancels"`
	Deletes   int `json:"deletes"`
}

// DuplicateParams returns the params hashes submitted more than once,
// across all batches, sorted.
func (st Stats) DuplicateParams() []string {
	n := map[string]int{}
	for _, s := range st.Submissions {
		n[s.ParamsHash]++
	}
	var out []string
	for h, c := range n {
		if c > 1 {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// SubmissionCounts returns how many times each prompt was submitted in a
// created batch, across all batches and API keys: the count of each
// Submission by the text of its last user message (or, for one without
// such text, by "params:" and its ParamsHash). A prompt re-batched under a
// new custom_id counts again, so a count above 1 is a prompt paid for more
// than once. Give each prompt of a test its own text.
func (st Stats) SubmissionCounts() map[string]int {
	n := map[string]int{}
	for _, sub := range st.Submissions {
		n[sub.contentKey()]++
	}
	return n
}

// ManagementCalls returns the number of batch API calls made: create,
// retrieve, list, results, cancel and delete.
func (st Stats) ManagementCalls() int {
	return st.Calls[EndpointCreate] + st.Calls[EndpointRetrieve] + st.Calls[EndpointList] +
		st.Calls[EndpointResults] + st.Calls[EndpointCancel] + st.Calls[EndpointDelete]
}

// statsState is the mutable form of Stats, guarded by Server.mu.
type statsState struct {
	calls       map[string]int
	submissions []Submission
	batches     map[string]*BatchStats
	bills       []Bill
}

func newStatsState() statsState {
	return statsState{calls: map[string]int{}, batches: map[string]*BatchStats{}}
}

func (st *statsState) submit(sub Submission) {
	st.submissions = append(st.submissions, sub)
}

func (st *statsState) batch(id string) *BatchStats {
	b := st.batches[id]
	if b == nil {
		b = &BatchStats{}
		st.batches[id] = b
	}
	return b
}

// count records a call to rt.
func (s *Server) count(rt routed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st.stats
	st.calls[rt.endpoint]++
	if rt.batchID == "" {
		return
	}
	if _, ok := s.st.batches[rt.batchID]; !ok {
		return
	}
	b := st.batch(rt.batchID)
	switch rt.endpoint {
	case EndpointRetrieve:
		b.Retrieves++
	case EndpointResults:
		b.Results++
	case EndpointCancel:
		b.Cancels++
	case EndpointDelete:
		b.Deletes++
	}
}

// Stats returns a snapshot of the emulator's observations.
func (s *Server) Stats() Stats {
	s.init()
	s.mu.Lock()
	s.land(s.now())
	st := &s.st.stats
	out := Stats{
		Calls:       maps.Clone(st.calls),
		Submissions: append([]Submission{}, st.submissions...),
		Bills:       append([]Bill{}, st.bills...),
		Batches:     make(map[string]BatchStats, len(st.batches)),
	}
	for id, b := range st.batches {
		out.Batches[id] = *b
	}
	s.mu.Unlock()
	s.fault.mu.Lock()
	out.FaultsFired = s.fault.fired
	s.fault.mu.Unlock()
	return out
}

// SubmissionCounts is Stats().SubmissionCounts(): how many times each
// prompt, by the text of its last user message, was submitted in a
// created batch.
func (s *Server) SubmissionCounts() map[string]int {
	return s.Stats().SubmissionCounts()
}

// BatchesCreated returns how many batches were created with apiKey (the
// key as sent, not its fingerprint), including deleted ones and late
// creates (Fault.LandAfter) that have landed; creates that failed or were
// dropped before processing do not count.
func (s *Server) BatchesCreated(apiKey string) int {
	s.init()
	fp := keyFingerprint(apiKey)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.land(s.now())
	n := 0
	for _, b := range s.st.batches {
		if b.key == fp {
			n++
		}
	}
	return n
}
