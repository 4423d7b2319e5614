package emulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/llmfleet/llmfleet"
)

const (
	batchLifetime  = 24 * time.Hour
	resultsKeptFor = 29 * 24 * time.Hour
)

var customIDRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// batch is one message batch.
type batch struct {
	id       string
	seq      int64
	key      string // API key fingerprint of its creator
	created  time.Time
	expires  time.Time
	end      time.Time // when it ends: all done, expired or canceled
	cancelAt time.Time // zero unless canceled
	items    []*batchItem
	settled  bool
	deleted  bool
	counts   llmfleet.RequestCounts
	results  []byte // JSONL, shuffled
	order    []int  // items by finish time
	next     int    // how many of order have run
}

// batchItem is one request of a batch.
type batchItem struct {
	customID string
	params   json.RawMessage
	done     time.Time // when its processing finishes
	ran      *ranItem  // its answer, once it has run
}

// handleCreate serves POST /v1/messages/batches.
func (s *Server) handleCreate(c *call) {
	body, e := readBody(c, MaxBatchBytes)
	if e != nil {
		writeError(c.w, e, c.id)
		return
	}
	items, e := parseBatchCreate(body)
	if e != nil {
		writeError(c.w, e, c.id)
		return
	}
	s.mu.Lock()
	now := s.now()
	s.advance(now)
	b := s.newBatch(c.key, now, items)
	out := s.batchJSON(b, now, c.r)
	s.mu.Unlock()
	writeJSON(c.w, http.StatusOK, out)
}

// landing is a batch create received under a Fault.LandAfter: its batch
// is created at a later time, as if the request had been processed then.
type landing struct {
	at    time.Time // when the batch is created
	key   string
	items []*batchItem
}

// landLater reads the whole body of call c and, if it is a batch create
// the emulator would accept, schedules its batch to be created d from now.
// Anything else lands nothing. The batch appears lazily: advance creates
// it once the clock has reached its landing time.
func (s *Server) landLater(c *call, d time.Duration) {
	defer io.Copy(io.Discard, c.r.Body)
	if c.endpoint != EndpointCreate || s.authenticate(c) != nil {
		return
	}
	body, e := readBody(c, MaxBatchBytes)
	if e != nil {
		return
	}
	items, e := parseBatchCreate(body)
	if e != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &landing{at: s.now().Add(d), key: c.key, items: items}
	ls := s.st.landings
	// After the landings due at the same time: they were received first.
	i := sort.Search(len(ls), func(i int) bool { return ls[i].at.After(l.at) })
	s.st.landings = slices.Insert(ls, i, l)
}

// land creates the batches of the late creates due by now, each at its
// landing time. The caller holds mu.
func (s *Server) land(now time.Time) {
	ls := s.st.landings
	n := 0
	for n < len(ls) && !ls[n].at.After(now) {
		s.newBatch(ls[n].key, ls[n].at, ls[n].items)
		n++
	}
	s.st.landings = slices.Delete(ls, 0, n)
}

// parseBatchCreate validates the envelope of a batch create body. The
// params of each request are validated only when the batch runs.
func parseBatchCreate(body []byte) ([]*batchItem, *apiError) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, invalid("Invalid JSON in request body: expected an object with a \"requests\" list")
	}
	for k := range top {
		if k != "requests" {
			return nil, invalid("%s: Extra inputs are not permitted", k)
		}
	}
	v, ok := top["requests"]
	if !ok || isNull(v) {
		return nil, invalid("requests: Field required")
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		return nil, invalid("requests: Input should be a valid list")
	}
	if len(raw) == 0 {
		return nil, invalid("requests: List should have at least 1 item after validation, not 0")
	}
	if len(raw) > MaxBatchRequests {
		return nil, invalid("requests: List should have at most %d items after validation, not %d", MaxBatchRequests, len(raw))
	}
	seen := make(map[string]bool, len(raw))
	items := make([]*batchItem, 0, len(raw))
	for i, r := range raw {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(r, &fields); err != nil || fields == nil {
			return nil, invalid("requests.%d: Input should be a valid dictionary", i)
		}
		for k := range fields {
			if k != "custom_id" && k != "params" {
				return nil, invalid("requests.%d.%s: Extra inputs are not permitted", i, k)
			}
		}
		var id string
		if v, ok := fields["custom_id"]; !ok || isNull(v) {
			return nil, invalid("requests.%d.custom_id: Field required", i)
		} else if err := json.Unmarshal(v, &id); err != nil {
			return nil, invalid("requests.%d.custom_id: Input should be a valid string", i)
		}
		if !customIDRE.MatchString(id) {
			return nil, invalid("requests.%d.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		if seen[id] {
			return nil, invalid("requests: custom_id values must be unique within a batch; %q is used more than once", id)
		}
		seen[id] = true
		pv, ok := fields["params"]
		if !ok || isNull(pv) {
			return nil, invalid("requests.%d.params: Field required", i)
		}
		if pv[0] != '{' {
			return nil, invalid("requests.%d.params: Input should be a valid dictionary", i)
		}
		items = append(items, &batchItem{customID: id, params: pv})
	}
	return items, nil
}

// newBatch creates a batch and schedules its items. The caller holds mu.
func (s *Server) newBatch(key string, now time.Time, items []*batchItem) *batch {
	st := s.st
	st.batchSeq++
	b := &batch{
		id:      "msgbatch_01" + idText(fmt.Sprintf("batch|%d|%d", s.Seed, st.batchSeq)),
		seq:     st.batchSeq,
		key:     key,
		created: now,
		expires: now.Add(batchLifetime),
		items:   items,
		counts:  llmfleet.RequestCounts{Processing: len(items)},
	}
	// Turnaround: the longest over the batch's distinct models; an item's
	// [turnaround:] directive sets its own. Items finish at random points
	// within the turnaround.
	r := s.rng("batch", b.seq)
	var models []string
	own := make([]time.Duration, len(items))
	texts := make([]string, len(items))
	for i, it := range items {
		own[i] = -1
		var m struct {
			Model string `json:"model"`
		}
		json.Unmarshal(it.params, &m)
		if !slices.Contains(models, m.Model) {
			models = append(models, m.Model)
		}
		if p, e := parseParams(it.params, modeBatch); e == nil {
			texts[i] = p.lastUserText()
			if d := parseDirectives(texts[i]); d.hasTurn {
				own[i] = max(d.turnaround, 0)
			}
		}
	}
	sort.Strings(models)
	var turn time.Duration
	for _, m := range models {
		turn = max(turn, s.turnaround(m, r))
	}
	natural := turn
	for i, it := range items {
		if own[i] >= 0 {
			it.done = now.Add(own[i])
			natural = max(natural, own[i])
		} else {
			it.done = now.Add(time.Duration(r.Float64() * float64(turn)))
		}
	}
	b.end = now.Add(min(natural, batchLifetime))
	b.orderItems()
	st.batches[b.id] = b
	st.byKey[key] = append(st.byKey[key], b)
	st.pending = append(st.pending, b)
	for i, it := range items {
		st.stats.submit(Submission{BatchID: b.id, CustomID: it.customID, ParamsHash: paramsHash(it.params), Text: texts[i]})
	}
	st.stats.batch(b.id).Requests = len(items)
	return b
}

// paramsHash is the hex SHA-256 of the compacted params JSON.
func paramsHash(p json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, p) != nil {
		buf.Reset()
		buf.Write(p)
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

// batchJSON is the MessageBatch object.
type batchJSON struct {
	ID                string                 `json:"id"`
	Type              string                 `json:"type"`
	ProcessingStatus  string                 `json:"processing_status"`
	RequestCounts     llmfleet.RequestCounts `json:"request_counts"`
	EndedAt           *string                `json:"ended_at"`
	CreatedAt         string                 `json:"created_at"`
	ExpiresAt         string                 `json:"expires_at"`
	ArchivedAt        *string                `json:"archived_at"`
	CancelInitiatedAt *string                `json:"cancel_initiated_at"`
	ResultsURL        *string                `json:"results_url"`
}

func rfc3339(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

func rfc3339p(t time.Time) *string {
	v := rfc3339(t)
	return &v
}

// batchJSON renders b as seen at now by request r. The caller holds mu.
func (s *Server) batchJSON(b *batch, now time.Time, r *http.Request) batchJSON {
	out := batchJSON{ID: b.id, Type: "message_batch", ProcessingStatus: "in_progress",
		RequestCounts: b.counts, CreatedAt: rfc3339(b.created), ExpiresAt: rfc3339(b.expires)}
	if !b.cancelAt.IsZero() {
		out.ProcessingStatus = "canceling"
		out.CancelInitiatedAt = rfc3339p(b.cancelAt)
	}
	if b.settled {
		out.ProcessingStatus = "ended"
		out.EndedAt = rfc3339p(b.end)
		u := resultsURL(r, b.id)
		out.ResultsURL = &u
	}
	if archived := b.created.Add(resultsKeptFor); !now.Before(archived) {
		out.ArchivedAt = rfc3339p(archived)
	}
	return out
}

// resultsURL is the absolute URL of a batch's results, on the host the
// request came to.
func resultsURL(r *http.Request, id string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/v1/messages/batches/" + id + "/results"
}

// lookup finds the caller's batch id. The caller holds mu.
func (s *Server) lookup(c *call, id string) (*batch, *apiError) {
	b, ok := s.st.batches[id]
	if !ok || b.deleted || b.key != c.key {
		return nil, notFound("No message batch found with id %q", id)
	}
	return b, nil
}
