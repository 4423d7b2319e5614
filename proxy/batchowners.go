package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/llmfleet/llmfleet"
)

// batchesPath is the path of the Message Batches API.
const batchesPath = "/v1/messages/batches"

// listPageSize is the limit of each upstream page of a filtered list of
// Message Batches, the largest the API takes.
const listPageSize = 1000

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
	// ForgetBatchOwner removes the owner of batchID, if one was
	// recorded: the object is gone upstream, and its name may be made
	// again (Gemini lets a client name its files).
	ForgetBatchOwner(ctx context.Context, batchID string) error
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

func (o *memOwners) ForgetBatchOwner(_ context.Context, batchID string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, batchID)
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
// list shows only the client's batches (ownerGate.list), and any call
// about one batch reaches upstream only if the client owns it (else 404,
// as for an unknown id).
func (f anthropicFace) serveBatches(w http.ResponseWriter, r *http.Request, client string) {
	g := gateOf(f.s, f, client)
	if r.URL.Path == batchesPath {
		switch r.Method {
		case http.MethodPost:
			// Its requests must not name what another client made.
			if e := f.s.refsOfBody(r, f, client); e != nil {
				f.refuse(w, e)
				return
			}
			if rec, ok := g.create(w, r); ok {
				writeTo(w, rec, rec.Body())
			}
			return
		case http.MethodGet:
			g.list(w, r, batchListShape)
			return
		}
		f.refuse(w, methodRefusal(r))
		return
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, batchesPath+"/"), "/")
	// The path must reach upstream as it was checked: no escapes, no dot
	// segments that could name another batch there.
	if r.URL.EscapedPath() != r.URL.Path || id == "" || strings.Contains(r.URL.Path, "/./") || strings.Contains(r.URL.Path, "/../") ||
		strings.HasSuffix(r.URL.Path, "/.") || strings.HasSuffix(r.URL.Path, "/..") {
		f.refuse(w, f.says(batchNotFound, id))
		return
	}
	if !g.owns(w, r, id, batchNotFound) {
		return
	}
	fullDuplex(w)
	f.upstream().ServeHTTP(w, r)
}

// batchList is a page of the list of batches, as the API answers it.
type batchList struct {
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
}

// batchListShape is how the Message Batches API lists: after_id, the
// default, pages towards older batches, before_id towards newer ones,
// from a page's first_id and last_id.
var batchListShape = listShape{
	pageSize: listPageSize, defLimit: 20, maxLimit: listPageSize,
	after: "after_id", before: "before_id", pageCursors: true,
	render: func(kept []json.RawMessage, hasMore bool, first, last *string) any {
		return batchList{Data: kept, HasMore: hasMore, FirstID: first, LastID: last}
	},
}

// prefix: the Anthropic face is served at the root, /v1/<path>.
func (f anthropicFace) prefix() (mount, api string) { return "", "/v1/" }

// hold maps the client's key to the upstream credential the proxy holds
// for it (Server.Credentials).
func (f anthropicFace) hold(presented llmfleet.Credential) (llmfleet.Credential, *refusal) {
	return holdWith(f, f.s.Credentials, presented)
}

// forCall returns the face for a call by the client named client.
func (f anthropicFace) forCall(_, client string) mountedFace {
	f.client = client
	return f
}

// routed: POST /v1/messages goes through the pipeline (the mux sends it
// there before the mount).
func (f anthropicFace) routed(method, path string) bool {
	return method == http.MethodPost && path == "/v1/messages"
}

// owned: the Message Batches API, served by owner, and the files the
// client's code wrote (codefiles.go).
func (f anthropicFace) owned(path string) bool {
	return isBatchesPath(path) || codeFileIDs(false, path) != nil
}

// serveOwned serves the Message Batches API, and the reads of the files
// its code wrote, for the face's client.
func (f anthropicFace) serveOwned(w http.ResponseWriter, r *http.Request) {
	if ids := codeFileIDs(false, r.URL.Path); ids != nil {
		serveCodeFile(w, r, gateOf(f.s, f, f.client), ids)
		return
	}
	f.serveBatches(w, r, f.client)
}

// shared reports whether a pass-through call may go upstream under the
// key every client shares (anthropicShared).
func (f anthropicFace) shared(method, path string) bool { return anthropicShared(method, path) }

// anthropicBilled is the Anthropic face's faceTraits.billed: a Message
// Batch created.
func anthropicBilled(method, path string) (bool, bool) {
	b := method == http.MethodPost && path == "/v1/messages/batches"
	return b, b
}
