package emulator

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/pricing"
)

// modelsPath is the Models API; GET modelsPath lists, GET modelsPath/{id}
// retrieves one.
const modelsPath = "/v1/models"

// modelInfo is one model of the Models API.
type modelInfo struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// modelPage is a page of the models list.
type modelPage struct {
	Data    []modelInfo `json:"data"`
	HasMore bool        `json:"has_more"`
	FirstID *string     `json:"first_id"`
	LastID  *string     `json:"last_id"`
}

// models returns the models the emulator lists, newest first (then by id,
// descending, so that claude-opus-4-8 comes before claude-opus-4-7).
func (s *Server) models() []modelInfo {
	ids := s.Models
	if ids == nil {
		ids = pricing.Default().Models(pricing.DefaultProvider)
	}
	out := make([]modelInfo, 0, len(ids))
	for _, id := range ids {
		out = append(out, describeModel(id))
	}
	slices.SortStableFunc(out, func(a, b modelInfo) int {
		if c := strings.Compare(b.CreatedAt, a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

// describeModel derives a model's display name and creation date from its
// id: "claude-3-5-haiku-20241022" is "Claude 3.5 Haiku", created on
// 2024-10-22. An id without a snapshot date gets a fixed date (2026-01-01),
// so that it lists before the dated snapshots.
func describeModel(id string) modelInfo {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var words []string
	var version []string
	flush := func() {
		if len(version) > 0 {
			words = append(words, strings.Join(version, "."))
			version = nil
		}
	}
	for _, part := range strings.Split(id, "-") {
		if len(part) == 8 && digitsOnly(part) {
			if t, err := time.Parse("20060102", part); err == nil {
				created = t
				continue
			}
		}
		if digitsOnly(part) {
			version = append(version, part)
			continue
		}
		flush()
		if part != "" {
			words = append(words, strings.ToUpper(part[:1])+part[1:])
		}
	}
	flush()
	return modelInfo{Type: "model", ID: id, DisplayName: strings.Join(words, " "),
		CreatedAt: created.Format(time.RFC3339)}
}

func digitsOnly(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// handleListModels serves GET /v1/models with limit, after_id and before_id
// paging.
func (s *Server) handleListModels(c *call) {
	q := c.r.URL.Query()
	limit, ok := listLimit(c)
	if !ok {
		return
	}
	all := s.models()
	index := func(id string) int {
		return slices.IndexFunc(all, func(m modelInfo) bool { return m.ID == id })
	}
	after, before := q.Get("after_id"), q.Get("before_id")
	if after != "" && before != "" {
		writeError(c.w, invalid("after_id and before_id cannot both be set"), c.id)
		return
	}
	var page []modelInfo
	hasMore := false
	switch {
	case before != "":
		i := index(before)
		if i < 0 {
			writeError(c.w, invalid("before_id: no model with id %q", before), c.id)
			return
		}
		lo := max(0, i-limit)
		page, hasMore = all[lo:i], lo > 0
	default:
		lo := 0
		if after != "" {
			i := index(after)
			if i < 0 {
				writeError(c.w, invalid("after_id: no model with id %q", after), c.id)
				return
			}
			lo = i + 1
		}
		hi := min(len(all), lo+limit)
		page, hasMore = all[lo:hi], hi < len(all)
	}
	p := modelPage{Data: page, HasMore: hasMore}
	if len(page) > 0 {
		p.FirstID, p.LastID = &page[0].ID, &page[len(page)-1].ID
	} else {
		p.Data = []modelInfo{}
	}
	writeJSON(c.w, http.StatusOK, p)
}

// handleGetModel serves GET /v1/models/{model_id}.
func (s *Server) handleGetModel(c *call) {
	id := strings.TrimPrefix(c.r.URL.Path, modelsPath+"/")
	for _, m := range s.models() {
		if m.ID == id {
			writeJSON(c.w, http.StatusOK, m)
			return
		}
	}
	writeError(c.w, notFound("model: %s", id), c.id)
}
