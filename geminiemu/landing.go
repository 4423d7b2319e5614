package geminiemu

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/geminiwire"
)

// This file keeps what crash tests count: the batches created by tag
// (displayName) and owner, the requests each holds (what is paid for once
// it runs), the reads of ended batches, and batches that land late
// (Server.LandAfter).

// Submission is one request of a created batch.
type Submission struct {
	// BatchID is the batch's id ("batches/" and it is its name).
	BatchID string
	// DisplayName is the batch's displayName.
	DisplayName string
	// Key is the request's key: its metadata's {"key"}, or its file
	// line's.
	Key string
	// Prompt is the text of its last user turn (as the answer quotes it).
	Prompt string
}

// landed reports whether b is there at now: it did not land late, or its
// landing time has come.
func (b *batch) landed(now time.Time) bool { return !now.Before(b.created) }

// submissionsLocked returns the batches landed by now, counted by
// displayName, and their requests, in create order. The caller holds mu.
func (s *Server) submissionsLocked(now time.Time) (map[string]int, []Submission) {
	created := map[string]int{}
	var subs []Submission
	for seq := 1; seq <= s.seq; seq++ {
		for _, b := range s.batches {
			if b.seq != seq || !b.landed(now) {
				continue
			}
			created[b.displayName]++
			for _, br := range b.requests {
				sub := Submission{BatchID: b.id, DisplayName: b.displayName, Key: br.key}
				if sub.Key == "" {
					sub.Key = geminiwire.KeyOf(br.metadata)
				}
				var req geminiwire.GenerateContentRequest
				if json.Unmarshal(br.request, &req) == nil {
					sub.Prompt = lastUser(req.Contents)
				}
				subs = append(subs, sub)
			}
		}
	}
	return created, subs
}

// BatchesCreated returns how many batches apiKey created that have
// landed by now (deleted ones are not counted).
func (s *Server) BatchesCreated(apiKey string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, n := s.now(), 0
	for _, b := range s.batches {
		if b.owner == apiKey && b.landed(now) {
			n++
		}
	}
	return n
}

// lateBy asks LandAfter how late a create of displayName lands (0: at
// once).
func (s *Server) lateBy(displayName string) time.Duration {
	if s.LandAfter == nil {
		return 0
	}
	return max(s.LandAfter(displayName), 0)
}

// countResults counts a read of an ended batch.
func (s *Server) countResults(op geminiwire.Operation) {
	if !op.Done {
		return
	}
	s.count(func(st *Stats) {
		if st.ResultsRead == nil {
			st.ResultsRead = map[string]int{}
		}
		st.ResultsRead[strings.TrimPrefix(op.Name, "batches/")]++
	})
}
