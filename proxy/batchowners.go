package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/llmfleet/llmfleet"
)

// batchesPath is the path of the Message Batches API.
const batchesPath = "/v1/messages/batches"

// maxListCalls bounds the upstream calls of one filtered list of batches
// (each asks for listPageSize batches).
const (
	maxListCalls = 10
	listPageSize = 1000
)

// BatchOwners keeps which client created which provider batch through the
// pass-through Message Batches API in proxy-held-key mode, where every
// client's batch is made under the one upstream key (see Server.BatchOwners).
// Owners are client names (Server.Fingerprint of the client key), never
// keys. The sqlite store implements it durably.
type BatchOwners interface {
	// RecordBatchOwner records that owner created the batch batchID.
	RecordBatchOwner(ctx context.Context, batchID, owner string) error
	// BatchOwner returns the recorded owner of batchID, or an error
	// wrapping llmfleet.ErrNotFound if none was recorded.
	BatchOwner(ctx context.Context, batchID string) (string, error)
}

// memOwners is the BatchOwners of a Server given none: kept in memory, so
// the batches it records are lost to their owners at restart.
type memOwners struct {
	mu sync.Mutex
	m  map[string]string
}

func (o *memOwners) RecordBatchOwner(_ context.Context, batchID, owner string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[string]string)
	}
	if _, ok := o.m[batchID]; !ok {
		o.m[batchID] = owner
	}
	return nil
}

func (o *memOwners) BatchOwner(_ context.Context, batchID string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if owner, ok := o.m[batchID]; ok {
		return owner, nil
	}
	return "", llmfleet.ErrNotFound
}

// isBatchesPath reports whether path is of the Message Batches API.
func isBatchesPath(path string) bool {
	return path == batchesPath || strings.HasPrefix(path, batchesPath+"/")
}

// serveBatches serves the Message Batches API in proxy-held-key mode for
// the client named client: a create records its batch as the client's, a
// list shows only the client's batches, and any call about one batch
// reaches upstream only if the client owns it (else 404, as for an
// unknown id).
func (s *Server) serveBatches(w http.ResponseWriter, r *http.Request, client string) {
	if r.URL.Path == batchesPath {
		switch r.Method {
		case http.MethodPost:
			s.createBatch(w, r, client)
			return
		case http.MethodGet:
			s.listBatches(w, r, client)
			return
		}
		fullDuplex(w)
		s.rp.ServeHTTP(w, r) // a method the API refuses: nothing to see
		return
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, batchesPath+"/"), "/")
	notFound := &apiError{http.StatusNotFound, "not_found_error", "Not found: no batch " + strconv.Quote(id) + " for this key"}
	// The path must reach upstream as it was checked: no escapes, no dot
	// segments that could name another batch there.
	if r.URL.EscapedPath() != r.URL.Path || id == "" || strings.Contains(r.URL.Path, "/./") || strings.Contains(r.URL.Path, "/../") ||
		strings.HasSuffix(r.URL.Path, "/.") || strings.HasSuffix(r.URL.Path, "/..") {
		writeAPIError(w, notFound)
		return
	}
	owner, err := s.batchOwners.BatchOwner(r.Context(), id)
	switch {
	case errors.Is(err, llmfleet.ErrNotFound) || err == nil && owner != client:
		writeAPIError(w, notFound)
		return
	case err != nil:
		s.stateError(w, r, "batch owner lookup failed", err)
		return
	}
	fullDuplex(w)
	s.rp.ServeHTTP(w, r)
}

// stateError answers 500 for a failure to read or write the proxy's state.
func (s *Server) stateError(w http.ResponseWriter, r *http.Request, msg string, err error) {
	if r.Context().Err() == nil {
		s.log.Warn(msg, "path", r.URL.Path, "err", err)
	}
	writeAPIError(w, &apiError{http.StatusInternalServerError, "api_error", "llmfleet could not read or write its state"})
}

// createBatch passes a batch create upstream and records the batch it
// made as the client's before answering.
func (s *Server) createBatch(w http.ResponseWriter, r *http.Request, client string) {
	r.Header.Del("Accept-Encoding") // the answer is read here: plain, please
	rec := newRecorder()
	s.rp.ServeHTTP(rec, r)
	if rec.status == http.StatusOK {
		var b struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(rec.body.Bytes(), &b); err != nil || b.ID == "" {
			s.log.Warn("batch created upstream without an id", "err", err)
			writeAPIError(w, &apiError{http.StatusBadGateway, "api_error", "llmfleet could not read the upstream's answer"})
			return
		}
		if err := s.batchOwners.RecordBatchOwner(context.WithoutCancel(r.Context()), b.ID, client); err != nil {
			s.log.Warn("batch created upstream but its owner not recorded", "batch", b.ID, "err", err)
			writeAPIError(w, &apiError{http.StatusInternalServerError, "api_error", "llmfleet could not record the batch " + b.ID})
			return
		}
	}
	rec.writeTo(w, rec.body.Bytes())
}

// batchList is a page of the list of batches, as the API answers it.
type batchList struct {
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
}

// listBatches answers a list of batches with the client's own only. It
// asks upstream for pages of listPageSize batches, in the direction of
// the client's cursor (after_id, the default, pages towards older batches;
// before_id towards newer ones), until it has the client's limit of its
// batches or the list ends, in at most maxListCalls calls. has_more,
// first_id and last_id describe the page answered: the ids are the first
// and last of its data, so that they page on from there. Should the scan
// end at its bound without finding one of the client's batches, the
// answer is an empty page with has_more false (the ids of other clients'
// batches are never shown, not even as a cursor).
func (s *Server) listBatches(w http.ResponseWriter, r *http.Request, client string) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > listPageSize {
			writeAPIError(w, invalidRequest("limit: Input should be an integer between 1 and 1000"))
			return
		}
		limit = n
	}
	after, before := q.Get("after_id"), q.Get("before_id")
	if after != "" && before != "" {
		writeAPIError(w, invalidRequest("after_id and before_id cannot both be given"))
		return
	}
	// A cursor must be one of the client's batches: another's would tell
	// whether it exists.
	for _, id := range []string{after, before} {
		if id == "" {
			continue
		}
		if owner, err := s.batchOwners.BatchOwner(r.Context(), id); err != nil || owner != client {
			if err != nil && !errors.Is(err, llmfleet.ErrNotFound) {
				s.stateError(w, r, "batch owner lookup failed", err)
				return
			}
			writeAPIError(w, invalidRequest(strconv.Quote(id)+" is not a valid batch id for pagination"))
			return
		}
	}
	r.Header.Del("Accept-Encoding")
	var kept []json.RawMessage
	hasMore := false
	var last *recorder
	for range maxListCalls {
		uq := url.Values{"limit": {strconv.Itoa(listPageSize)}}
		if before != "" {
			uq.Set("before_id", before)
		} else if after != "" {
			uq.Set("after_id", after)
		}
		rec := fetchWith(s.rp, r, uq)
		last = rec
		if rec.status != http.StatusOK {
			rec.writeTo(w, rec.body.Bytes()) // the upstream's error, as it is
			return
		}
		var page batchList
		if err := json.Unmarshal(rec.body.Bytes(), &page); err != nil {
			// Never passed on: it may list other clients' batches.
			s.log.Warn("unreadable list of batches from upstream", "err", err)
			writeAPIError(w, &apiError{http.StatusBadGateway, "api_error", "llmfleet could not read the upstream's answer"})
			return
		}
		var mine []json.RawMessage
		for _, item := range page.Data {
			var b struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(item, &b) != nil {
				continue
			}
			owned, err := s.ownedBy(r.Context(), b.ID, client)
			if err != nil {
				s.stateError(w, r, "batch owner lookup failed", err)
				return
			}
			if owned {
				mine = append(mine, item)
			}
		}
		if before != "" { // newest first: the newer page goes in front
			kept = append(mine, kept...)
		} else {
			kept = append(kept, mine...)
		}
		hasMore = page.HasMore
		if len(kept) >= limit || !page.HasMore || page.FirstID == nil || page.LastID == nil {
			break
		}
		if before != "" {
			before = *page.FirstID
		} else {
			after = *page.LastID
		}
	}
	if len(kept) > limit {
		if before != "" { // keep those next to the cursor
			kept = kept[len(kept)-limit:]
		} else {
			kept = kept[:limit]
		}
		hasMore = true
	}
	out := batchList{Data: kept, HasMore: hasMore}
	if out.Data == nil {
		out.Data = []json.RawMessage{}
		out.HasMore = false
	}
	if len(kept) > 0 {
		first, lastID := idOf(kept[0]), idOf(kept[len(kept)-1])
		out.FirstID, out.LastID = &first, &lastID
	}
	body, _ := json.Marshal(out)
	last.writeTo(w, body)
}

// idOf returns the id of a batch object.
func idOf(item json.RawMessage) string {
	var b struct {
		ID string `json:"id"`
	}
	json.Unmarshal(item, &b)
	return b.ID
}

// ownedBy reports whether the recorded owner of id is client; an id with
// no owner recorded is nobody's.
func (s *Server) ownedBy(ctx context.Context, id, client string) (bool, error) {
	owner, err := s.batchOwners.BatchOwner(ctx, id)
	if errors.Is(err, llmfleet.ErrNotFound) {
		return false, nil
	}
	return err == nil && owner == client, err
}
