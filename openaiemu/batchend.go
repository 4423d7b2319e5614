package openaiemu

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/internal/httprec"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// viewLocked brings a batch's status up to now: validating → failed, or
// in_progress → completed (its lines answered, output and error files
// written) at its end; cancelling → cancelled, and expired at 24 h, with
// the lines answered by then.
func (s *Server) viewLocked(b *batch, now time.Time) batchObject {
	o := &b.obj
	if b.finishing {
		return *o
	}
	if o.Status == "validating" {
		if len(b.failures) > 0 {
			o.Status, o.FailedAt, o.Errors = "failed", unix(b.created), &openaiwire.BatchErrors{Object: "list", Data: b.failures}
			return *o
		}
		o.Status, o.InProgressAt = "in_progress", unix(b.created)
	}
	switch {
	case o.Status == "cancelling":
		s.finishLocked(b, now, "cancelled")
	case o.Status == "in_progress" && !now.Before(b.ends) && b.ends.Before(b.created.Add(24*time.Hour)):
		s.finishLocked(b, b.ends, "completed")
	case o.Status == "in_progress" && !now.Before(b.created.Add(24*time.Hour)):
		s.finishLocked(b, b.created.Add(24*time.Hour), "expired")
	}
	return *o
}

// finishLocked answers the lines of a batch that ended at end with status:
// all of them when it completed, those it had reached by then when it
// was cancelled or expired (the rest are batch_cancelled or batch_expired
// lines of its error file). Output lines come shuffled.
func (s *Server) finishLocked(b *batch, end time.Time, status string) {
	o := &b.obj
	b.finishing = true
	defer func() { b.finishing = false }()
	if status == "completed" {
		o.Status, o.FinalizingAt = "finalizing", unix(end)
	}
	done := len(b.lines)
	if status != "completed" {
		span := b.ends.Sub(b.created)
		if span > 0 {
			done = int(float64(len(b.lines)) * float64(end.Sub(b.created)) / float64(span))
		}
		done = min(max(done, 0), len(b.lines))
	}
	var out, errs []string
	for i, l := range b.lines {
		reqID := "batch_req_" + hashID("", o.ID, l.CustomID)[:24]
		if i >= done {
			code, msg := "batch_cancelled", "This request was cancelled before it ran."
			if status == "expired" {
				code, msg = "batch_expired", "This request could not be executed before the completion window expired."
			}
			line, _ := json.Marshal(map[string]any{"id": reqID, "custom_id": l.CustomID, "response": nil,
				"error": map[string]string{"code": code, "message": msg}})
			errs = append(errs, string(line))
			o.RequestCounts.Failed++
			continue
		}
		status, body := s.answerLocked(b, l)
		line, _ := json.Marshal(map[string]any{"id": reqID, "custom_id": l.CustomID,
			"response": map[string]any{"status_code": status, "request_id": "req_" + hashID("", reqID)[:24], "body": json.RawMessage(body)},
			"error":    nil})
		if status != http.StatusOK {
			errs = append(errs, string(line))
			o.RequestCounts.Failed++
			continue
		}
		out = append(out, string(line))
		o.RequestCounts.Completed++
		if a, err := openaiwire.ReadAnswer(body); err == nil {
			u := &o.Usage
			u.InputTokens += int(a.Usage.InputTokens + a.Usage.CacheReadInputTokens)
			u.InputTokensDetails.CachedTokens += int(a.Usage.CacheReadInputTokens)
			u.OutputTokens += int(a.Usage.OutputTokens)
			u.TotalTokens = u.InputTokens + u.OutputTokens
		}
	}
	shuffle(out, o.ID)
	if len(out) > 0 {
		id := s.addFileLocked(b.owner, o.ID+"_output.jsonl", out, end)
		o.OutputFileID = &id
	}
	if len(errs) > 0 {
		id := s.addFileLocked(b.owner, o.ID+"_error.jsonl", errs, end)
		o.ErrorFileID = &id
	}
	at := unix(end)
	o.Status = status
	switch status {
	case "completed":
		o.CompletedAt = at
	case "cancelled":
		o.CancelledAt = at
	case "expired":
		o.ExpiredAt = at
	}
}

// addFileLocked stores lines as a batch_output file of owner.
func (s *Server) addFileLocked(owner, name string, lines []string, at time.Time) string {
	f := &file{ID: s.newIDLocked("file-"), Owner: owner, Filename: name, Purpose: "batch_output", CreatedAt: at,
		ExpiresAt: at.Add(30 * 24 * time.Hour), Content: []byte(strings.Join(lines, "\n") + "\n")}
	s.filesLocked()[f.ID] = f
	return f.ID
}

// answerLocked answers one line by its endpoint's own handler, as the
// batch's owner; s.mu is let go meanwhile (the handler counts), the batch
// being marked finishing.
func (s *Server) answerLocked(b *batch, l batchLine) (int, []byte) {
	s.mu.Unlock()
	defer s.mu.Lock()
	r, _ := http.NewRequest(http.MethodPost, l.URL, bytes.NewReader(l.Body))
	r.Header.Set("Authorization", "Bearer "+b.key)
	if b.project != "" {
		r.Header.Set("OpenAI-Project", b.project)
	}
	rec := &httprec.Recorder{}
	s.answer(rec, r)
	return rec.Status(), rec.Body()
}

// shuffle reorders lines deterministically by seed: batch results come in
// any order.
func shuffle(lines []string, seed string) {
	key := func(s string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(seed))
		h.Write([]byte(s))
		return h.Sum64()
	}
	slices.SortFunc(lines, func(a, b string) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
}
