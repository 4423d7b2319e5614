package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/llmfleet/llmfleet"
)

// This file keeps, in proxy-held-key mode, what each client made under
// the one upstream key (batches, files, responses) its own, for every
// face: the owners book, and the gate through which a face's pass-through
// API reaches only what the client owns, its lists filtered by owner.

// ownerBook records and reads who owns what (Server.BatchOwners).
type ownerBook struct {
	store   BatchOwners
	log     *slog.Logger
	pending *unrecorded
}

// bookOf returns the Server's owners book.
func bookOf(s *Server) ownerBook {
	return ownerBook{store: s.batchOwners, log: s.log, pending: s.unrecorded}
}

// owns reports whether the recorded owner of id is client; an id with
// no owner recorded is nobody's, unless an answer to client named it
// while the store could not be written: its record is tried again then
// (an error if it fails again, answered as a failure to read the state,
// which the client may retry).
func (b ownerBook) owns(ctx context.Context, id, client string) (bool, error) {
	owner, err := b.store.BatchOwner(ctx, id)
	if errors.Is(err, llmfleet.ErrNotFound) {
		if b.pending.owner(id) != client || client == "" {
			return false, nil
		}
		if err := b.record(ctx, id, client); err != nil {
			return false, err
		}
		b.pending.done(id)
		return true, nil
	}
	return err == nil && owner == client, err
}

// record records client as the owner of id, even if the caller has left.
func (b ownerBook) record(ctx context.Context, id, client string) error {
	return b.store.RecordBatchOwner(context.WithoutCancel(ctx), id, client)
}

// recordNamed records client as the owner of ids ("" skipped), which an
// answer to it names; an id the store cannot take is kept as client's, to
// be recorded when client names it (owns), and the failure logged.
func (b ownerBook) recordNamed(ctx context.Context, client string, ids ...string) {
	for _, id := range ids {
		if id == "" || id == citedPrefix {
			continue
		}
		if file, ok := strings.CutPrefix(id, citedPrefix); ok {
			id = citedKey(client, file)
		}
		if err := b.record(ctx, id, client); err != nil {
			b.pending.keep(id, client)
			b.log.Warn("owner of an object an answer names not recorded yet: recorded when its client names it", "id", id, "err", err)
		}
	}
}

// recordAnswer records, with proxy-held keys (client "": none), what the
// answer body to client names (as its face's ids reads it) as client's.
// A failure is not answered: the answer is the client's all the same
// (recordNamed).
func (b ownerBook) recordAnswer(ctx context.Context, client string, body []byte, ids func([]byte) []string) {
	if client != "" {
		b.recordNamed(ctx, client, ids(body)...)
	}
}

// created records client as the owner of id, an object the upstream
// has just made: its name was free there, so an owner still recorded for
// it is that of an object gone since (deleted, or expired), and the name
// is client's now. (Records other than a create's, such as a batch's
// output file read from it, keep the first owner: record.)
func (b ownerBook) created(ctx context.Context, id, client string) error {
	ctx = context.WithoutCancel(ctx)
	owner, err := b.store.BatchOwner(ctx, id)
	switch {
	case err == nil && owner != client:
		if err := b.store.ForgetBatchOwner(ctx, id); err != nil {
			return err
		}
	case err != nil && !errors.Is(err, llmfleet.ErrNotFound):
		return err
	}
	return b.store.RecordBatchOwner(ctx, id, client)
}

// forget removes the owner of id, an object deleted upstream.
func (b ownerBook) forget(ctx context.Context, id string) error {
	return b.store.ForgetBatchOwner(context.WithoutCancel(ctx), id)
}

// logStateError logs a failure to read or write the proxy's state, unless
// the caller left.
func logStateError(log *slog.Logger, r *http.Request, msg string, err error) {
	if r.Context().Err() == nil {
		log.Warn(msg, "path", r.URL.Path, "err", err)
	}
}

// ownerGate passes a client's calls of a face's owned API (Message
// Batches; Files and Batches) upstream through up only as far as they
// concern what the client owns, answering refusals in the face's words.
type ownerGate struct {
	book   ownerBook
	up     http.Handler
	f      face
	client string
	// name returns the name an object of the API is owned by (nil: its
	// "id", idOf).
	name func(json.RawMessage) string
}

// gateOf returns the owner gate of f's pass-through API for client.
func gateOf(s *Server, f mountedFace, client string) ownerGate {
	return ownerGate{book: bookOf(s), up: f.upstream(), f: f, client: client}
}

// state answers a failure to read or write the owners.
func (g ownerGate) state(w http.ResponseWriter, r *http.Request, msg string, err error) {
	logStateError(g.book.log, r, msg, err)
	g.f.refuse(w, g.f.says(stateFailed, ""))
}

// owns reports whether the client owns id, answering the refusal
// notFound (or a state failure) when it does not.
func (g ownerGate) owns(w http.ResponseWriter, r *http.Request, id string, notFound refusalKind) bool {
	owned, err := g.book.owns(r.Context(), id, g.client)
	switch {
	case err != nil:
		g.state(w, r, "owner lookup failed", err)
	case !owned:
		g.f.refuse(w, g.f.says(notFound, id))
	}
	return owned
}

// create passes a create upstream and records the object it made as the
// client's. It returns the upstream's answer, not yet written, or false if
// it answered a refusal.
func (g ownerGate) create(w http.ResponseWriter, r *http.Request) (*recorder, bool) {
	r.Header.Del("Accept-Encoding") // the answer is read here: plain, please
	rec := newRecorder()
	g.up.ServeHTTP(rec, r)
	if rec.Status() != http.StatusOK {
		return rec, true
	}
	id := idOf(rec.Body())
	if id == "" {
		g.book.log.Warn("object created upstream without an id", "path", r.URL.Path)
		g.f.refuse(w, g.f.says(unreadable, ""))
		return nil, false
	}
	if err := g.book.created(r.Context(), id, g.client); err != nil {
		logStateError(g.book.log, r, "object created upstream but its owner not recorded: "+id, err)
		g.f.refuse(w, g.f.says(notRecorded, id))
		return nil, false
	}
	return rec, true
}

// idOf returns the id of an object.
func idOf(item json.RawMessage) string {
	var b struct {
		ID string `json:"id"`
	}
	json.Unmarshal(item, &b)
	return b.ID
}

// maxListCalls bounds the upstream calls of one filtered list.
const maxListCalls = 10

// listShape is how a face's API lists, and how its filtered lists page:
// the shape of the APIs that list by id cursors in pages of
// {data, has_more} (the Message Batches API, batchListShape; OpenAI's
// Files and Batches APIs, openAIListShape). An API that lists otherwise
// has its face filter its lists itself, with the gate's owners (mine):
// the Gemini face's pages by token (geminiGate.list).
type listShape struct {
	// pageSize is the limit of each upstream page.
	pageSize int
	// defLimit and maxLimit are the client's default and largest limit.
	defLimit, maxLimit int
	// after and before name the cursor parameters ("" for none).
	after, before string
	// pass names the parameters passed upstream as they came.
	pass []string
	// pageCursors pages on from a page's first_id or last_id, else from
	// the id of its last object.
	pageCursors bool
	// render returns the body of the filtered page.
	render func(kept []json.RawMessage, hasMore bool, first, last *string) any
}

// listPage is a page of a list, as the APIs answer it.
type listPage struct {
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
}

// listQuery is what a client asks of a filtered list.
type listQuery struct {
	limit         int
	after, before string
}

// query reads the client's limit and cursors, each cursor one of the
// client's own (another's would tell whether it exists).
func (g ownerGate) query(w http.ResponseWriter, r *http.Request, sh listShape) (listQuery, bool) {
	q := r.URL.Query()
	lq := listQuery{limit: sh.defLimit, after: q.Get(sh.after)}
	if sh.before != "" {
		lq.before = q.Get(sh.before)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > sh.maxLimit {
			g.f.refuse(w, g.f.says(badLimit, strconv.Itoa(sh.maxLimit)))
			return lq, false
		}
		lq.limit = n
	}
	if lq.after != "" && lq.before != "" {
		g.f.refuse(w, g.f.says(bothCursors, ""))
		return lq, false
	}
	for _, id := range []string{lq.after, lq.before} {
		if id == "" {
			continue
		}
		if owned, err := g.book.owns(r.Context(), id, g.client); !owned {
			if err != nil {
				g.state(w, r, "owner lookup failed", err)
				return lq, false
			}
			g.f.refuse(w, g.f.says(badCursor, id))
			return lq, false
		}
	}
	return lq, true
}

// list answers a list with the client's own objects only. It asks
// upstream for pages of sh.pageSize, in the direction of the client's
// cursor (after, the default, pages on; before pages back), until it has
// the client's limit of its objects or the list ends, in at most
// maxListCalls calls. has_more, first_id and last_id describe the page
// answered: the ids are the first and last of its data, so that they page
// on from there. Should the scan end at its bound without finding one of
// the client's objects, the answer is an empty page with has_more false
// (the ids of other clients' objects are never shown, not even as a
// cursor).
func (g ownerGate) list(w http.ResponseWriter, r *http.Request, sh listShape) {
	lq, ok := g.query(w, r, sh)
	if !ok {
		return
	}
	r.Header.Del("Accept-Encoding")
	var kept []json.RawMessage
	hasMore := false
	var last *recorder
	for range maxListCalls {
		page, rec, ok := g.page(w, r, sh, lq)
		if !ok {
			return
		}
		last = rec
		mine, err := g.mine(r.Context(), page.Data)
		if err != nil {
			g.state(w, r, "owner lookup failed", err)
			return
		}
		if lq.before != "" { // newest first: the newer page goes in front
			kept = append(mine, kept...)
		} else {
			kept = append(kept, mine...)
		}
		hasMore = page.HasMore
		if len(kept) >= lq.limit || !page.HasMore || !lq.next(sh, page) {
			break
		}
	}
	if len(kept) > lq.limit {
		if lq.before != "" { // keep those next to the cursor
			kept = kept[len(kept)-lq.limit:]
		} else {
			kept = kept[:lq.limit]
		}
		hasMore = true
	}
	var first, lastID *string
	if len(kept) > 0 {
		f, l := idOf(kept[0]), idOf(kept[len(kept)-1])
		first, lastID = &f, &l
	} else {
		kept, hasMore = []json.RawMessage{}, false
	}
	body, _ := json.Marshal(sh.render(kept, hasMore, first, lastID))
	writeTo(w, last, body)
}

// page fetches the next upstream page of lq. An error answer of the
// upstream is passed on as it is; a page that cannot be read is never
// passed on (it may list other clients' objects).
func (g ownerGate) page(w http.ResponseWriter, r *http.Request, sh listShape, lq listQuery) (listPage, *recorder, bool) {
	var page listPage
	q := r.URL.Query()
	uq := url.Values{"limit": {strconv.Itoa(sh.pageSize)}}
	for _, k := range sh.pass {
		if v := q.Get(k); v != "" {
			uq.Set(k, v)
		}
	}
	if lq.before != "" {
		uq.Set(sh.before, lq.before)
	} else if lq.after != "" {
		uq.Set(sh.after, lq.after)
	}
	rec := fetchWith(g.up, r, uq)
	if rec.Status() != http.StatusOK {
		writeTo(w, rec, rec.Body())
		return page, nil, false
	}
	if err := json.Unmarshal(rec.Body(), &page); err != nil {
		g.book.log.Warn("unreadable list from upstream", "path", r.URL.Path, "err", err)
		g.f.refuse(w, g.f.says(unreadable, ""))
		return page, nil, false
	}
	return page, rec, true
}

// mine returns the objects of data the client owns.
func (g ownerGate) mine(ctx context.Context, data []json.RawMessage) ([]json.RawMessage, error) {
	name := g.name
	if name == nil {
		name = idOf
	}
	var mine []json.RawMessage
	for _, item := range data {
		id := name(item)
		if id == "" {
			continue
		}
		owned, err := g.book.owns(ctx, id, g.client)
		if err != nil {
			return nil, err
		}
		if owned {
			mine = append(mine, item)
		}
	}
	return mine, nil
}

// next moves lq's cursor past page, reporting false if the page gives
// nothing to page on from.
func (lq *listQuery) next(sh listShape, page listPage) bool {
	if !sh.pageCursors {
		if len(page.Data) == 0 {
			return false
		}
		lq.after = idOf(page.Data[len(page.Data)-1])
		return true
	}
	if page.FirstID == nil || page.LastID == nil {
		return false
	}
	if lq.before != "" {
		lq.before = *page.FirstID
	} else {
		lq.after = *page.LastID
	}
	return true
}
