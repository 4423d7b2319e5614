package emulator

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// handleRetrieve serves GET /v1/messages/batches/{id}.
func (s *Server) handleRetrieve(c *call) {
	s.mu.Lock()
	now := s.now()
	s.advance(now)
	b, e := s.lookup(c, batchIDOf(c))
	if e != nil {
		s.mu.Unlock()
		writeError(c.w, e, c.id)
		return
	}
	out := s.batchJSON(b, now, c.r)
	settled := b.settled
	s.mu.Unlock()
	if ra := s.batchRetryAfter(); !settled && ra > 0 {
		c.w.Header().Set("Retry-After", strconv.Itoa(int(ra/time.Second)))
	}
	writeJSON(c.w, http.StatusOK, out)
}

// batchRetryAfter returns BatchRetryAfter, 10s when zero, rounded up to
// whole seconds.
func (s *Server) batchRetryAfter() time.Duration {
	if s.BatchRetryAfter == 0 {
		return 10 * time.Second
	}
	return (s.BatchRetryAfter + time.Second - 1).Truncate(time.Second)
}

// handleCancel serves POST /v1/messages/batches/{id}/cancel.
func (s *Server) handleCancel(c *call) {
	s.mu.Lock()
	now := s.now()
	s.advance(now)
	b, e := s.lookup(c, batchIDOf(c))
	if e == nil && b.settled {
		e = invalid("Message batch %s has already ended and can no longer be canceled", b.id)
	}
	if e != nil {
		s.mu.Unlock()
		writeError(c.w, e, c.id)
		return
	}
	if b.cancelAt.IsZero() {
		b.cancelAt = now
		delay := s.CancelDelay
		if delay == 0 {
			delay = time.Second
		}
		b.end = minTime(b.end, now.Add(max(delay, 0)))
	}
	out := s.batchJSON(b, now, c.r)
	s.mu.Unlock()
	writeJSON(c.w, http.StatusOK, out)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// handleDelete serves DELETE /v1/messages/batches/{id}.
func (s *Server) handleDelete(c *call) {
	s.mu.Lock()
	now := s.now()
	s.advance(now)
	b, e := s.lookup(c, batchIDOf(c))
	if e == nil && !b.settled {
		e = invalid("Message batch %s is still being processed; cancel it and wait for it to end before deleting it", b.id)
	}
	if e != nil {
		s.mu.Unlock()
		writeError(c.w, e, c.id)
		return
	}
	b.deleted = true
	b.results = nil
	list := s.st.byKey[b.key]
	if i := slices.Index(list, b); i >= 0 {
		s.st.byKey[b.key] = slices.Delete(list, i, i+1)
	}
	s.mu.Unlock()
	writeJSON(c.w, http.StatusOK, map[string]string{"id": b.id, "type": "message_batch_deleted"})
}

// handleResults serves GET /v1/messages/batches/{id}/results.
func (s *Server) handleResults(c *call) {
	s.mu.Lock()
	now := s.now()
	s.advance(now)
	b, e := s.lookup(c, batchIDOf(c))
	switch {
	case e != nil:
	case !b.settled:
		e = invalid("Message batch %s has not ended yet; results are available once processing_status is \"ended\"", b.id)
	case !now.Before(b.created.Add(resultsKeptFor)):
		e = notFound("The results of message batch %s are no longer available", b.id)
	}
	if e != nil {
		s.mu.Unlock()
		writeError(c.w, e, c.id)
		return
	}
	data := b.results
	s.mu.Unlock()
	ct := "application/x-jsonl"
	if strings.Contains(c.r.Header.Get("Accept"), "application/binary") {
		ct = "application/binary"
	}
	c.w.Header().Set("Content-Type", ct)
	c.w.Header().Set("Content-Disposition", "attachment; filename*=utf-8''"+b.id+"_results.jsonl")
	c.w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	c.w.WriteHeader(http.StatusOK)
	c.w.Write(data)
}

// listJSON is a page of the batch listing.
type listJSON struct {
	Data    []batchJSON `json:"data"`
	HasMore bool        `json:"has_more"`
	FirstID *string     `json:"first_id"`
	LastID  *string     `json:"last_id"`
}

// handleList serves GET /v1/messages/batches.
func (s *Server) handleList(c *call) {
	q := c.r.URL.Query()
	limit, ok := listLimit(c)
	if !ok {
		return
	}
	after, before := q.Get("after_id"), q.Get("before_id")
	if after != "" && before != "" {
		writeError(c.w, invalid("after_id and before_id cannot both be given"), c.id)
		return
	}
	s.mu.Lock()
	now := s.now()
	s.advance(now)
	cursor := func(id string) (int64, *apiError) {
		b, ok := s.st.batches[id]
		if !ok || b.key != c.key {
			return 0, invalid("%q is not a valid batch id for pagination", id)
		}
		return b.seq, nil
	}
	all := s.st.byKey[c.key] // oldest first
	var page []*batch
	hasMore := false
	switch {
	case before != "":
		seq, e := cursor(before)
		if e != nil {
			s.mu.Unlock()
			writeError(c.w, e, c.id)
			return
		}
		// The limit batches just newer than the cursor, newest first.
		var newer []*batch
		for _, b := range all {
			if b.seq > seq {
				newer = append(newer, b)
			}
		}
		if len(newer) > limit {
			newer, hasMore = newer[:limit], true
		}
		page = newer
		slices.Reverse(page)
	default:
		seq := int64(1 << 62)
		if after != "" {
			var e *apiError
			if seq, e = cursor(after); e != nil {
				s.mu.Unlock()
				writeError(c.w, e, c.id)
				return
			}
		}
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].seq >= seq {
				continue
			}
			if len(page) == limit {
				hasMore = true
				break
			}
			page = append(page, all[i])
		}
	}
	out := listJSON{Data: make([]batchJSON, 0, len(page)), HasMore: hasMore}
	for _, b := range page {
		out.Data = append(out.Data, s.batchJSON(b, now, c.r))
	}
	if len(page) > 0 {
		out.FirstID = &page[0].id
		out.LastID = &page[len(page)-1].id
	}
	s.mu.Unlock()
	writeJSON(c.w, http.StatusOK, out)
}

// batchIDOf is the batch id in the call's path.
func batchIDOf(c *call) string {
	rest := strings.TrimPrefix(c.r.URL.Path, "/v1/messages/batches/")
	id, _, _ := strings.Cut(rest, "/")
	return id
}

// listLimit reads the limit of a list call (1 to 1000, default 20); false
// means it was invalid and the call is answered.
func listLimit(c *call) (int, bool) {
	v := c.r.URL.Query().Get("limit")
	if v == "" {
		return 20, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		writeError(c.w, invalid("limit: Input should be an integer between 1 and 1000"), c.id)
		return 0, false
	}
	return n, true
}
